//! The transaction coordinator (KIP-98): one per `transactional.id`, on the
//! shard that owns the id's `__transaction_state` partition
//! ([`partition_for_transactional_id`], Kafka's formula). Handlers on any
//! shard forward InitProducerId (with a transactional id),
//! AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and DescribeTransactions here
//! with `Shard::invoke_on`.
//!
//! The decisions are `txn::state_machine`'s (pure, unit-tested); this
//! module applies them on the shard: the busy mark per id, appends to
//! `__transaction_state`, COMMIT / ABORT markers written to every partition
//! of a transaction over the cross-core channels to the partitions' owner
//! shards, and the timers. Every transition is written to
//! `__transaction_state` before it takes effect, and replayed on start-up
//! (`txn::load`); a transaction found in a Prepare state after a restart
//! gets its markers written again.
//!
//! One operation per transactional id runs at a time; a request arriving
//! meanwhile gets CONCURRENT_TRANSACTIONS, which clients retry. Partition
//! leaders' adds (transactions v2) instead queue and are written together,
//! one record per batch (`txn::leader_add`).
//! Transactions open for longer than their `transaction.timeout.ms` are
//! aborted with a bumped producer epoch (fencing the producer), checked every
//! `transaction.abort.timed.out.transaction.cleanup.interval.ms`.
//!
//! One coordinator per shard thread ([`TransactionCoordinator::here`]). It
//! follows the leadership of its `__transaction_state` partitions as a
//! listener the shard calls ([`TransactionCoordinator::install`]): a
//! partition led here is loaded in the background, one chunk at a time read
//! off the reactor, its ids answering COORDINATOR_LOAD_IN_PROGRESS until it
//! is loaded; its transactions found half-way through a commit or abort are
//! then finished. A partition no longer led here is unloaded.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::time::Duration;

use super::error::{MarkerCause, ProducerIdAllocationCause, TxnError};
use super::load::{Loaded, Replay};
use super::records::{self, TxnLogValue, TxnVersion};
use super::state_machine::{self as sm, EndDecision, EndPlan, InitDecision, InitRequest, Markers};
use super::{TxnConfig, TRANSACTION_STATE_TOPIC};
use crate::group::GroupCoordinator;
use crate::group::OFFSETS_TOPIC;
use crate::producer_state::ProducerStateError;
use crate::shard::error::MarkerFailure;
use crate::shard::internal::{append_records, replay_log};
use crate::shard::listener::LeadershipListener;
use crate::shard::partition::Partition;
use crate::shard::{now_ms, Shard};

pub use super::state_machine::{TxnDescription, TxnMetadata};

/// The `__transaction_state` partition of a transactional id: Java's
/// `String.hashCode` of the id, made non-negative, modulo the partition count
/// (`transaction.state.log.num.partitions`), as Kafka computes it.
pub fn partition_for_transactional_id(transactional_id: &str, partitions: i32) -> i32 {
    crate::group::records::partition_for_group(transactional_id, partitions)
}

/// The transactional ids coordinated by this shard.
#[derive(Default)]
pub struct TransactionCoordinator {
    txns: RefCell<HashMap<String, TxnMetadata>>,
    /// Ids with an operation in flight.
    busy: RefCell<HashSet<String>>,
    /// Partition leaders' adds queued per id (transactions v2).
    pub(super) adds: super::leader_add::LeaderAdds,
    /// `__transaction_state` partitions being loaded, each with the number
    /// of its load (a load that finds another number was superseded).
    loading: RefCell<HashMap<i32, u64>>,
    /// The number of the last load started.
    loads: std::cell::Cell<u64>,
}

thread_local! {
    /// The transaction coordinator of the shard running on this thread.
    static HERE: Rc<TransactionCoordinator> = Rc::new(TransactionCoordinator::default());
}

/// This shard's transaction coordinator.
pub(super) fn here() -> Rc<TransactionCoordinator> {
    TransactionCoordinator::here()
}

/// Marks a transactional id busy for as long as it lives.
pub(super) struct Busy {
    txns: Rc<TransactionCoordinator>,
    id: String,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.txns.busy.borrow_mut().remove(&self.id);
    }
}

/// Marks `id` busy; COORDINATOR_LOAD_IN_PROGRESS while its
/// `__transaction_state` partition loads, CONCURRENT_TRANSACTIONS when it
/// already is busy.
pub(super) fn acquire(shard: &Shard, id: &str) -> Result<Busy, TxnError> {
    let txns = ready(shard, id)?;
    if !txns.busy.borrow_mut().insert(id.to_string()) {
        return Err(TxnError::ConcurrentTransactions { state: None });
    }
    Ok(Busy {
        txns,
        id: id.to_string(),
    })
}

/// This shard's coordinator, if `id`'s `__transaction_state` partition is
/// led here and loaded; COORDINATOR_LOAD_IN_PROGRESS (14) while it loads,
/// NOT_COORDINATOR (16) once this broker no longer leads it (its ids were
/// forgotten: an answer from them would be wrong).
pub(super) fn ready(shard: &Shard, id: &str) -> Result<Rc<TransactionCoordinator>, TxnError> {
    let txns = here();
    let p = partition_for_transactional_id(id, shard.config.txn.state_log_partitions);
    if txns.loading.borrow().contains_key(&p) {
        return Err(TxnError::CoordinatorLoadInProgress);
    }
    if coordinator_epoch(shard, id).is_none() {
        return Err(TxnError::NotCoordinator);
    }
    Ok(txns)
}

/// The coordinator epoch of `id` on this shard (KIP-98's
/// `coordinator_epoch`): the leader epoch of the id's `__transaction_state`
/// partition while this broker leads it; None when it does not (another
/// broker coordinates the id now). Every marker carries it, so a partition
/// refuses the markers of a coordinator older than one it heard from.
fn coordinator_epoch(shard: &Shard, id: &str) -> Option<i32> {
    let partition = partition_for_transactional_id(id, shard.config.txn.state_log_partitions);
    shard
        .partition(TRANSACTION_STATE_TOPIC, partition)
        .filter(|p| p.is_leader())
        .map(|p| p.leader_epoch())
}

impl TransactionCoordinator {
    /// The transaction coordinator of the shard running on this thread.
    pub fn here() -> Rc<TransactionCoordinator> {
        HERE.with(Rc::clone)
    }

    /// Makes this shard's coordinator follow the leadership of its
    /// `__transaction_state` partitions (start-up, before the first image).
    pub fn install(shard: &Shard) {
        shard.add_leadership_listener(Rc::new(StateLeadership));
    }

    /// Whether any `__transaction_state` partition of this shard is loading.
    pub fn any_loading(&self) -> bool {
        !self.loading.borrow().is_empty()
    }

    /// This broker stopped leading `part` (a `__transaction_state`
    /// partition): a load in progress stops, and the transactional ids it
    /// holds are another broker's now (Kafka's `onResignation`). They are
    /// forgotten here, and their marker retries and timers stop at their
    /// next step (each checks [`coordinator_epoch`]); the new leader loads
    /// them from the log.
    fn resign(&self, shard: &Shard, part: &Partition) {
        let n = shard.config.txn.state_log_partitions;
        let index = part.index();
        self.loading.borrow_mut().remove(&index);
        let mine = |id: &str| partition_for_transactional_id(id, n) == index;
        let before = self.txns.borrow().len();
        self.txns.borrow_mut().retain(|id, _| !mine(id));
        let unloaded = before - self.txns.borrow().len();
        if unloaded > 0 {
            log::info!(
                "{}-{index}: no longer led here; {unloaded} transactional id(s) unloaded",
                part.topic()
            );
        }
    }

    pub(super) fn get(&self, id: &str) -> Option<TxnMetadata> {
        self.txns.borrow().get(id).cloned()
    }

    fn set(&self, id: &str, m: TxnMetadata) {
        self.txns.borrow_mut().insert(id.to_string(), m);
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

    /// Starts loading `part` (a `__transaction_state` partition this
    /// broker now leads) in the background: the log is replayed from its
    /// start to its end ([`Replay`]), one chunk at a time read off the
    /// reactor, while its ids answer COORDINATOR_LOAD_IN_PROGRESS. Once
    /// loaded, its ids are adopted whole and the transactions found in a
    /// Prepare state get their markers written again
    /// ([`TransactionCoordinator::resume`]). A resignation during the load
    /// stops it.
    fn begin_load(self: &Rc<Self>, shard: &Rc<Shard>, part: Rc<Partition>) {
        let number = self.loads.get() + 1;
        self.loads.set(number);
        let index = part.index();
        self.loading.borrow_mut().insert(index, number);
        let me = self.clone();
        let shard = shard.clone();
        crate::shard::stall::spawn_local("txn load", async move {
            let current = || me.loading.borrow().get(&index) == Some(&number);
            let mut replay = Replay::default();
            crate::shard::fault::hold_load(&part).await;
            let read = replay_log(&part, |records| {
                if !current() {
                    return false;
                }
                for r in records {
                    if let Err(e) = replay.apply_record(r) {
                        log::warn!(
                            "skipping record at offset {} of {}-{index}: {e}",
                            r.offset,
                            part.topic()
                        );
                    }
                }
                true
            })
            .await;
            if !current() {
                return;
            }
            me.loading.borrow_mut().remove(&index);
            if let Err(e) = read {
                // The ids read before the error are kept, as Kafka's
                // coordinator keeps what it loaded before an unreadable
                // batch.
                log::error!("loading {}-{index}: {e}", part.topic());
            }
            let loaded = replay.finish();
            log::info!(
                "{}-{index}: loaded {} record(s): {} transactional id(s), {} to finish",
                part.topic(),
                loaded.records,
                loaded.txns.len(),
                loaded.pending.len()
            );
            let pending: Vec<String> = loaded.pending.iter().map(|(id, _)| id.clone()).collect();
            me.adopt(loaded);
            Self::resume(&shard, pending);
        })
        .detach();
    }

    /// Takes over the transactional ids of a loaded partition.
    fn adopt(&self, loaded: Loaded) {
        self.txns.borrow_mut().extend(loaded.txns);
    }

    /// Finishes the transactions of `pending`, adopted in a Prepare state:
    /// writes their markers again (retrying until they are written), then
    /// completes them.
    fn resume(shard: &Rc<Shard>, pending: Vec<String>) {
        let txns = here();
        for id in pending {
            let Ok(busy) = acquire(shard, &id) else {
                continue;
            };
            let Some(m) = txns.get(&id) else {
                continue;
            };
            let Some(markers) = sm::pending_markers(&m.value) else {
                continue;
            };
            let Some(epoch) = coordinator_epoch(shard, &id) else {
                continue;
            };
            log::info!(
                "transactional id {id}: completing the {} found in the log",
                if markers.commit { "commit" } else { "abort" }
            );
            let plan = EndPlan {
                prepare: sm::Transition {
                    value: m.value,
                    last_epoch: m.last_epoch,
                },
                markers,
            };
            let s = shard.clone();
            crate::shard::stall::spawn_local("txn recovery", async move {
                finish_markers(&s, &id, plan, epoch, Some(busy)).await;
            })
            .detach();
        }
    }

    /// Starts the timers that abort timed-out transactions and remove
    /// expired transactional ids (start-up).
    pub fn start(shard: &Rc<Shard>) {
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
        let cfg = shard.config.txn.clone();
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

/// The transaction coordinator as the shard's [`LeadershipListener`] for
/// `__transaction_state`.
struct StateLeadership;

impl LeadershipListener for StateLeadership {
    fn became_leader(&self, shard: &Rc<Shard>, part: &Rc<Partition>) {
        if &**part.topic() == TRANSACTION_STATE_TOPIC {
            here().begin_load(shard, part.clone());
        }
    }

    fn resigned(&self, shard: &Rc<Shard>, part: &Rc<Partition>) {
        if &**part.topic() == TRANSACTION_STATE_TOPIC {
            here().resign(shard, part);
        }
    }
}

/// Writes `value` (or a tombstone) for `id` to its `__transaction_state`
/// partition. Errors with StatePartitionNotHere (COORDINATOR_NOT_AVAILABLE)
/// when that partition is not on this shard, StateAppend with the append's
/// code (KAFKA_STORAGE_ERROR on I/O).
async fn persist(shard: &Rc<Shard>, id: &str, value: Option<&TxnLogValue>) -> Result<(), TxnError> {
    let partition = partition_for_transactional_id(id, shard.config.txn.state_log_partitions);
    let Some(part) = shard.partition(TRANSACTION_STATE_TOPIC, partition) else {
        return Err(TxnError::StatePartitionNotHere { partition });
    };
    let record = (records::txn_key(id), value.map(records::txn_value));
    append_records(&part, vec![record], None)
        .await
        .map(|_| ())
        .map_err(|e| {
            log::warn!("append to __transaction_state-{partition} failed: {e}");
            TxnError::StateAppend {
                partition,
                cause: (&e).into(),
            }
        })
}

/// Persists, then applies, a transition of `id`.
pub(super) async fn transition(
    shard: &Rc<Shard>,
    id: &str,
    t: &sm::Transition,
) -> Result<(), TxnError> {
    persist(shard, id, Some(&t.value)).await?;
    here().set(id, t.metadata());
    Ok(())
}

/// A fresh producer id from this broker's block, refilled by the active
/// controller (InitProducerId, with or without a transactional id). Errors:
/// [`TxnError::ProducerIdAllocation`] (COORDINATOR_NOT_AVAILABLE, 15) when
/// no block can be had.
pub async fn new_producer_id(shard: &Rc<Shard>) -> Result<i64, TxnError> {
    crate::shard::controller_call::new_producer_id(shard)
        .await
        .map_err(|e| {
            log::warn!("cannot allocate a producer id: {e}");
            TxnError::ProducerIdAllocation {
                cause: ProducerIdAllocationCause::Controller(e),
            }
        })
}

/// InitProducerId with a transactional id. `timeout_ms` is the producer's
/// `transaction.timeout.ms`; `current` is the (producer id, epoch) the
/// client passes from v3 (KIP-360), (-1, -1) otherwise. Gives (producer id,
/// epoch) or the error decided by [`sm::init_producer_id`] (or of the busy
/// mark, the append, the producer id allocation). An open transaction is
/// aborted first, its epoch bumped (fencing the old producer); if its
/// markers are not all written yet, CONCURRENT_TRANSACTIONS.
pub async fn init_producer_id(
    shard: Rc<Shard>,
    id: String,
    timeout_ms: i32,
    current: (i64, i16),
) -> Result<(i64, i16), TxnError> {
    let mut req = InitRequest::new(timeout_ms, current.0, current.1);
    sm::check_timeout(&req, &shard.config.txn)?;
    let _busy = acquire(&shard, &id)?;
    loop {
        let m = here().get(&id);
        let t = match sm::init_producer_id(m.as_ref(), &req, now_ms(), &shard.config.txn)? {
            InitDecision::Persist(t) => t,
            InitDecision::NewProducerId => {
                let pid = new_producer_id(&shard).await?;
                sm::with_new_producer_id(pid, &req, now_ms())
            }
            InitDecision::AbortOngoing(plan) => {
                log::info!(
                    "transactional id {id}: a new producer fences epoch {}; aborting its open transaction",
                    m.as_ref().map_or(-1, |m| m.value.producer_epoch)
                );
                if !end_transaction(&shard, &id, plan).await? {
                    // Markers still being retried: the client retries later.
                    return Err(TxnError::ConcurrentTransactions {
                        state: here().get(&id).map(|m| m.value.status),
                    });
                }
                // Decide again on the aborted state; the pair was checked.
                req.current = None;
                continue;
            }
        };
        transition(&shard, &id, &t).await?;
        return Ok((t.value.producer_id, t.value.producer_epoch));
    }
}

/// Whether `partition` is in the open transaction of `id` with this producer
/// id and epoch ([`sm::verify_partition`]: INVALID_PRODUCER_ID_MAPPING,
/// INVALID_PRODUCER_EPOCH, CONCURRENT_TRANSACTIONS or TRANSACTION_ABORTABLE
/// otherwise; NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS from
/// [`ready`]). Produce (before
/// a transaction's first batch on a partition) and TxnOffsetCommit ask
/// this, as Kafka 3.6+ does (KIP-890).
pub fn verify_partition(
    shard: &Rc<Shard>,
    id: &str,
    producer_id: i64,
    epoch: i16,
    partition: &(String, i32),
) -> Result<(), TxnError> {
    sm::verify_partition(
        ready(shard, id)?.get(id).as_ref(),
        producer_id,
        epoch,
        partition,
    )
}

/// AddPartitionsToTxn / AddOffsetsToTxn: adds `partitions` to the open
/// transaction of `id` (opening one if none), written to
/// `__transaction_state` before the answer, recording the client's
/// transaction version `tv`. The error (for all of them) is
/// [`sm::add_partitions`]'s, the busy mark's or the append's.
pub async fn add_partitions(
    shard: Rc<Shard>,
    id: String,
    producer_id: i64,
    epoch: i16,
    partitions: Vec<(String, i32)>,
    tv: TxnVersion,
) -> Result<(), TxnError> {
    let _busy = acquire(&shard, &id)?;
    let m = here().get(&id);
    match sm::add_partitions(m.as_ref(), producer_id, epoch, &partitions, tv, now_ms())? {
        None => Ok(()),
        Some(t) => transition(&shard, &id, &t).await,
    }
}

/// How long a partition leader's add (transactions v2) waits for the id to
/// be free when it finds another operation on it (InitProducerId, EndTxn,
/// markers being written, a client's AddPartitionsToTxn): Kafka's default
/// `add.partitions.to.txn.retry.backoff.max.ms` (100 ms).
pub const LEADER_ADD_RETRY_MS: u64 = 100;

/// [`add_partitions`] for a partition leader (Produce v12+, TxnOffsetCommit
/// v5+, AddPartitionsToTxn v4+ without `verify_only`), recorded as
/// transactions v2: joined with the other leaders' adds for `id` that
/// arrive while one is written, into one `__transaction_state` record
/// (`txn::leader_add`); the owners of one request's partitions on different
/// shards add them at the same time. Errors: [`add_partitions`]'s, each
/// add its own; CONCURRENT_TRANSACTIONS after waiting
/// [`LEADER_ADD_RETRY_MS`] for another operation on the id.
pub async fn add_partitions_for_leader(
    shard: Rc<Shard>,
    id: String,
    producer_id: i64,
    epoch: i16,
    partitions: Vec<(String, i32)>,
) -> Result<(), TxnError> {
    super::leader_add::add(shard, id, producer_id, epoch, partitions).await
}

/// EndTxn: commits (`commit`) or aborts the open transaction of `id`, with
/// the client's transaction version `tv` (v5+ is transactions v2, which
/// bumps the epoch, [`sm::end_txn_v2`]). The decision is written to
/// `__transaction_state` (PrepareCommit / PrepareAbort), then the markers
/// to every partition, then the Complete state; the answer follows the
/// markers, so a read_committed consumer sees a committed transaction once
/// the producer's commit returns. Gives the (producer id, epoch) the
/// producer continues with (EndTxn v5's answer: bumped, or a new id at
/// epoch 0 once the epoch is exhausted). The errors are [`sm::end_txn`]'s,
/// the busy mark's, the producer id allocation's or the append's.
pub async fn end_txn(
    shard: Rc<Shard>,
    id: String,
    producer_id: i64,
    epoch: i16,
    commit: bool,
    tv: TxnVersion,
) -> Result<(i64, i16), TxnError> {
    let _busy = acquire(&shard, &id)?;
    let mut next_producer_id = None;
    loop {
        let m = here().get(&id);
        let plan = match sm::end_txn(
            m.as_ref(),
            producer_id,
            epoch,
            commit,
            tv,
            next_producer_id,
            now_ms(),
        )? {
            EndDecision::AlreadyDone {
                producer_id,
                producer_epoch,
            } => return Ok((producer_id, producer_epoch)),
            EndDecision::NewProducerId => {
                next_producer_id = Some(new_producer_id(&shard).await?);
                continue;
            }
            EndDecision::End(plan) => plan,
        };
        let after = sm::complete(&plan.prepare, commit, now_ms()).value;
        end_transaction(&shard, &id, plan).await?;
        return Ok((after.producer_id, after.producer_epoch));
    }
}

/// Applies an [`EndPlan`]: Prepare state, markers, Complete state. The
/// caller holds the id busy. When a marker cannot be written the Prepare
/// state stays and a background task keeps retrying; the decision is
/// already durable, so this is still a success, giving `false` (`true` when
/// the transaction is complete).
async fn end_transaction(shard: &Rc<Shard>, id: &str, plan: EndPlan) -> Result<bool, TxnError> {
    let Some(epoch) = coordinator_epoch(shard, id) else {
        return Err(TxnError::NotCoordinator);
    };
    transition(shard, id, &plan.prepare).await?;
    match write_markers(shard, &plan.markers, epoch).await {
        Ok(()) => {
            complete(shard, id, &plan).await;
            Ok(true)
        }
        Err(e) => {
            log::warn!(
                "transactional id {id}: markers not all written ({e}); retrying in the background"
            );
            // The Prepare state keeps other operations out
            // (CONCURRENT_TRANSACTIONS) until the retries succeed.
            let s = shard.clone();
            let id = id.to_string();
            crate::shard::stall::spawn_local("txn markers", async move {
                finish_markers(&s, &id, plan, epoch, None).await
            })
            .detach();
            Ok(false)
        }
    }
}

/// Writes the Complete state after every marker of `plan` is written,
/// unless the id left that Prepare state meanwhile.
async fn complete(shard: &Rc<Shard>, id: &str, plan: &EndPlan) {
    if !sm::still_prepared(here().get(id).as_ref(), &plan.prepare.value) {
        log::warn!(
            "transactional id {id}: state changed while its markers were written; leaving it"
        );
        return;
    }
    let done = sm::complete(&plan.prepare, plan.markers.commit, now_ms());
    if let Err(e) = transition(shard, id, &done).await {
        // The markers are written; a restart replays the Prepare state and
        // writes them again, which is harmless.
        log::warn!("transactional id {id}: cannot write the Complete state ({e})");
        here().set(id, done.metadata());
    }
}

/// Retries the markers of a Prepare state until they are all written, then
/// completes the transaction (restart recovery, or after a failed write).
/// Stops (leaving the transaction to the new coordinator) as soon as this
/// broker is no longer the id's coordinator at coordinator epoch `epoch`.
async fn finish_markers(
    shard: &Rc<Shard>,
    id: &str,
    plan: EndPlan,
    epoch: i32,
    busy: Option<Busy>,
) {
    let mut backoff = 100u64;
    loop {
        if coordinator_epoch(shard, id) != Some(epoch) {
            log::info!(
                "transactional id {id}: no longer coordinated here at coordinator epoch {epoch}; its markers are left to the new coordinator"
            );
            return;
        }
        match write_markers(shard, &plan.markers, epoch).await {
            Ok(()) => break,
            Err(e) => {
                log::warn!("transactional id {id}: writing markers failed ({e}); retrying");
                glommio::timer::sleep(Duration::from_millis(backoff)).await;
                backoff = (backoff * 2).min(5_000);
            }
        }
    }
    complete(shard, id, &plan).await;
    drop(busy);
}

/// Writes the COMMIT or ABORT markers of `markers` to every partition of
/// the transaction, each on its owner shard (concurrently, over the
/// cross-core channels). Offsets partitions also end the transaction's
/// pending offset commits. Partitions of deleted topics, and partitions that
/// know a newer epoch of the producer, are skipped. Errors with the first
/// partition that failed ([`TxnError::MarkerWrite`]).
async fn write_markers(
    shard: &Rc<Shard>,
    markers: &Markers,
    coordinator_epoch: i32,
) -> Result<(), TxnError> {
    let mut by_owner: BTreeMap<usize, Vec<(String, i32)>> = BTreeMap::new();
    let mut by_leader: BTreeMap<i32, Vec<(String, i32)>> = BTreeMap::new();
    let image = shard.metadata();
    let node = shard.config.node_id;
    for (t, p) in &markers.partitions {
        // A partition another broker leads gets its marker there
        // (WriteTxnMarkers); one led here (or gone) on its owner shard.
        match image.partition(t, *p).map(|r| r.leader) {
            Some(leader) if leader != node => {
                by_leader.entry(leader).or_default().push((t.clone(), *p))
            }
            _ => by_owner
                .entry(shard.owner(t, *p))
                .or_default()
                .push((t.clone(), *p)),
        }
    }
    let (pid, epoch, commit) = (markers.producer_id, markers.producer_epoch, markers.commit);
    let mut remote_tasks = Vec::new();
    for (leader, partitions) in by_leader {
        let first = partitions.first().cloned().unwrap_or_default();
        let remote = shard.remote();
        let me = shard.clone();
        let ask = crate::shard::remote::RemoteMarkers {
            producer_id: pid,
            producer_epoch: epoch,
            commit,
            coordinator_epoch,
            partitions,
        };
        remote_tasks.push((
            first,
            crate::shard::stall::spawn_local("txn marker to a leader", async move {
                match remote {
                    Some(r) => r.write_markers(me, leader, ask).await,
                    None => Err(crate::shard::remote::RemoteError::NotInstalled),
                }
            }),
        ));
    }
    let mut tasks = Vec::new();
    for (owner, parts) in by_owner {
        let me = shard.clone();
        // The first partition of the owner names a failure to reach it.
        let first = parts.first().cloned().unwrap_or_default();
        let task = crate::shard::stall::spawn_local("txn marker fan-out", async move {
            me.invoke_on(owner, move |s| async move {
                for (t, p) in parts {
                    let Some(part) = s.partition(&t, p) else {
                        // Still opening (after a restart or a move): the
                        // marker waits for it (the caller retries).
                        if s.is_opening(&t, p) {
                            return Err(TxnError::MarkerWrite {
                                topic: t,
                                partition: p,
                                cause: MarkerCause::Partition(MarkerFailure::NotLeader),
                            });
                        }
                        log::warn!("marker for {t}-{p} skipped: the partition is gone");
                        continue;
                    };
                    let written = part.write_marker(pid, epoch, commit, coordinator_epoch).await;
                    match written.as_ref().map_err(MarkerFailure::from) {
                        Ok(_) => {
                            if t == OFFSETS_TOPIC {
                                let n = s.config.group.offsets_topic_partitions;
                                GroupCoordinator::here().complete_txn(pid, p, n, commit);
                            }
                        }
                        Err(MarkerFailure::Producer(ProducerStateError::FencedEpoch { .. })) => {
                            log::warn!("marker for {t}-{p} skipped: the partition knows a newer epoch of producer {pid}");
                        }
                        Err(c) => {
                            return Err(TxnError::MarkerWrite {
                                topic: t,
                                partition: p,
                                cause: MarkerCause::Partition(c),
                            })
                        }
                    }
                }
                Ok(())
            })
            .await
        });
        tasks.push((first, task));
    }
    let mut first_err = None;
    for ((topic, partition), t) in remote_tasks {
        if let Err(e) = t.await {
            first_err.get_or_insert(TxnError::MarkerWrite {
                topic,
                partition,
                cause: MarkerCause::Remote(e),
            });
        }
    }
    for ((topic, partition), t) in tasks {
        match t.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(e) => {
                first_err.get_or_insert(TxnError::MarkerWrite {
                    topic,
                    partition,
                    cause: MarkerCause::Shard(e),
                });
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Aborts every Ongoing transaction older than its timeout, bumping the
/// producer epoch so the producer is fenced (Kafka's behaviour;
/// [`sm::timeout_abort`]).
async fn abort_timed_out(shard: &Rc<Shard>) {
    let now = now_ms();
    let expired = here().ids_where(|m| sm::timeout_abort(m, now).is_some());
    for id in expired {
        let Ok(busy) = acquire(shard, &id) else {
            continue;
        };
        let Some(m) = here().get(&id) else {
            continue;
        };
        let Some(plan) = sm::timeout_abort(&m, now_ms()) else {
            continue;
        };
        log::info!(
            "transactional id {id}: transaction open for longer than {} ms; aborting it (producer epoch {} fenced)",
            m.value.timeout_ms,
            m.value.producer_epoch
        );
        if let Err(e) = end_transaction(shard, &id, plan).await {
            log::warn!("transactional id {id}: timeout abort failed ({e}); will retry");
        }
        drop(busy);
    }
}

/// Removes transactional ids idle (no open transaction) for longer than
/// `transactional.id.expiration.ms` ([`sm::expired`]), writing a tombstone
/// for each.
async fn remove_expired(shard: &Rc<Shard>, cfg: &TxnConfig) {
    let now = now_ms();
    let expired = here().ids_where(|m| sm::expired(m, now, cfg));
    for id in expired {
        let Ok(_busy) = acquire(shard, &id) else {
            continue;
        };
        if persist(shard, &id, None).await.is_ok() {
            here().txns.borrow_mut().remove(&id);
            log::info!("transactional id {id} expired (transactional.id.expiration.ms)");
        }
    }
}

/// DescribeTransactions for one id ([`sm::describe`]:
/// TRANSACTIONAL_ID_NOT_FOUND when unknown).
pub fn describe(shard: &Rc<Shard>, id: &str) -> TxnDescription {
    match ready(shard, id) {
        Ok(txns) => sm::describe(id, txns.get(id).as_ref()),
        Err(e) => sm::describe_error(id, e),
    }
}

/// The description of an id answered with `error`, for ids no coordinator
/// can be asked about.
pub fn describe_error(id: &str, error: TxnError) -> TxnDescription {
    sm::describe_error(id, error)
}

/// ListTransactions on this shard: ids whose state is in `states` (all when
/// empty), whose producer id is in `producer_ids` (all when empty) and, when
/// `min_duration_ms` ≥ 0, whose transaction has been open at least that long
/// (v1, KIP-994). COORDINATOR_LOAD_IN_PROGRESS while one of this shard's
/// `__transaction_state` partitions loads, as Kafka answers then.
pub fn list(
    states: &[String],
    producer_ids: &[i64],
    min_duration_ms: i64,
) -> Result<Vec<TxnDescription>, TxnError> {
    let txns = here();
    if txns.any_loading() {
        return Err(TxnError::CoordinatorLoadInProgress);
    }
    let now = now_ms();
    let listed = txns
        .txns
        .borrow()
        .iter()
        .filter(|(_, m)| sm::list_matches(m, states, producer_ids, min_duration_ms, now))
        .map(|(id, m)| sm::summary(id, m))
        .collect();
    Ok(listed)
}
