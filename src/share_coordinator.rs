//! The share coordinator (KIP-932): the persisted state of every
//! share-partition (group, topic id, partition) whose `__share_group_state`
//! partition this shard leads. Its key `groupId:topicId:partition` maps to
//! a partition as Kafka 4.4's does (`abs(hashCode(key)) %
//! share.coordinator.state.topic.num.partitions`, the formula of groups and
//! transactional ids).
//!
//! The decisions are `share::state`'s (pure, unit-tested); this module
//! applies them on the shard: it follows the leadership of the
//! `__share_group_state` partitions as the shard's leadership listener
//! (replaying a partition's records when this broker becomes its leader,
//! answering COORDINATOR_LOAD_IN_PROGRESS until then, forgetting them on
//! resignation), and writes each record (committed to the high watermark,
//! as the other coordinators do) before the request answers.
//!
//! The domain API, one share-partition per call, from any shard of this
//! broker (each call runs on the shard leading the key's state partition):
//! [`initialize`], [`read`], [`write`], [`delete`], [`summary`]. A key
//! whose state partition another broker leads answers NOT_COORDINATOR, as
//! Kafka's share coordinator does; the share-partition leaders forward to
//! that broker (Kafka's persister: `replication::share_store`). The
//! handlers of InitializeShareGroupState (83), ReadShareGroupState (84),
//! WriteShareGroupState (85), DeleteShareGroupState (86) and
//! ReadShareGroupStateSummary (87) call it; so will the share-partition
//! leaders and the group coordinator.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use crate::cluster::error::CoordinatorLookupError;
use crate::shard::internal::{append_records, replay_log};
use crate::shard::listener::LeadershipListener;
use crate::shard::partition::Partition;
use crate::shard::{now_ms, Shard};
use crate::share::records::ShareStateRecord;
use crate::share::state::{
    coordinator_key, ReadAnswer, ShareStates, StateKey, SummaryAnswer, WriteRequest,
};

/// The internal topic of share-partition states.
pub const SHARE_GROUP_STATE_TOPIC: &str = "__share_group_state";

pub use crate::shard::share_store::ShareCoordinatorError;

/// The share coordinator of one shard.
pub struct ShareCoordinator {
    states: RefCell<ShareStates>,
    /// Partitions being loaded, each with the number of its load.
    loading: RefCell<HashMap<i32, u64>>,
    loads: Cell<u64>,
    /// One state change at a time on this shard: a decision and its
    /// append are not interleaved with another's (the readiness of the
    /// partition is checked once it is this change's turn).
    writes: glommio::sync::Semaphore,
}

impl Default for ShareCoordinator {
    fn default() -> Self {
        ShareCoordinator {
            states: RefCell::new(ShareStates::default()),
            loading: RefCell::new(HashMap::new()),
            loads: Cell::new(0),
            writes: glommio::sync::Semaphore::new(1),
        }
    }
}

thread_local! {
    static HERE: Rc<ShareCoordinator> = Rc::new(ShareCoordinator::default());
}

fn here() -> Rc<ShareCoordinator> {
    HERE.with(Rc::clone)
}

/// The partition count of `__share_group_state`: as the topic exists, else
/// `share.coordinator.state.topic.num.partitions`.
fn partitions(shard: &Shard) -> i32 {
    shard
        .metadata()
        .topic(SHARE_GROUP_STATE_TOPIC)
        .map(|t| t.partitions)
        .filter(|n| *n > 0)
        .unwrap_or(shard.config.share_coordinator.state_topic_partitions)
}

/// The `__share_group_state` partition of a coordinator key.
pub fn partition_for_key(key: &str, partitions: i32) -> i32 {
    crate::group::records::partition_for_group(key, partitions)
}

/// The `__share_group_state` partition of a share-partition.
pub fn state_partition(shard: &Shard, key: &StateKey) -> i32 {
    partition_for_key(&coordinator_key(&key.0, key.1, key.2), partitions(shard))
}

/// The shard owning `key`'s state partition on this broker. Errors with
/// [`CoordinatorLookupError`]: TopicMissing (COORDINATOR_NOT_AVAILABLE)
/// before the topic exists, NotCoordinator when another broker leads it.
pub fn owner(shard: &Shard, key: &StateKey) -> Result<usize, CoordinatorLookupError> {
    if shard.metadata().topic(SHARE_GROUP_STATE_TOPIC).is_none() {
        return Err(CoordinatorLookupError::TopicMissing {
            topic: SHARE_GROUP_STATE_TOPIC,
        });
    }
    let p = state_partition(shard, key);
    crate::cluster::leadership::coordinator_here(
        &shard.metadata(),
        shard.config.node_id,
        SHARE_GROUP_STATE_TOPIC,
        p,
    )?;
    Ok(shard.owner(SHARE_GROUP_STATE_TOPIC, p))
}

/// Whether the metadata has `key`'s topic id and partition.
fn known(shard: &Shard, key: &StateKey) -> bool {
    shard
        .metadata()
        .topic_by_id(&key.1)
        .is_some_and(|t| key.2 < t.partitions)
}

/// This shard's coordinator when `key`'s partition is led here and loaded.
fn ready(
    shard: &Shard,
    key: &StateKey,
) -> Result<(Rc<Partition>, Rc<ShareCoordinator>), ShareCoordinatorError> {
    let me = here();
    let p = state_partition(shard, key);
    if me.loading.borrow().contains_key(&p) {
        return Err(ShareCoordinatorError::LoadInProgress);
    }
    let part = shard
        .partition(SHARE_GROUP_STATE_TOPIC, p)
        .filter(|part| part.is_leader())
        .ok_or(ShareCoordinatorError::NotCoordinator)?;
    Ok((part, me))
}

/// Appends `records` to `part` (acknowledged by the ISR), then applies them.
async fn persist(
    me: &ShareCoordinator,
    part: &Rc<Partition>,
    records: Vec<ShareStateRecord>,
) -> Result<(), ShareCoordinatorError> {
    if records.is_empty() {
        return Ok(());
    }
    let encoded = records.iter().map(ShareStateRecord::encode).collect();
    append_records(part, encoded, None).await.map_err(|e| {
        log::warn!("append to {}-{} failed: {e}", part.topic(), part.index());
        ShareCoordinatorError::Append {
            partition: part.index(),
            cause: (&e).into(),
        }
    })?;
    if !part.is_leader() {
        // Resigned meanwhile: the new leader replays the record.
        return Ok(());
    }
    let mut states = me.states.borrow_mut();
    for r in &records {
        states.apply(r);
    }
    Ok(())
}

/// Runs `f` for `key` on the shard of this broker that leads its
/// `__share_group_state` partition. Errors: Lookup (COORDINATOR_NOT_AVAILABLE
/// before the topic exists, NOT_COORDINATOR when another broker leads the
/// partition), Unavailable (the owner shard could not be reached), or
/// `f`'s.
async fn on_owner<R, F, Fut>(
    shard: &Rc<Shard>,
    key: StateKey,
    f: F,
) -> Result<R, ShareCoordinatorError>
where
    R: Send + 'static,
    F: FnOnce(Rc<Shard>, StateKey) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<R, ShareCoordinatorError>> + 'static,
{
    let target = owner(shard, &key)?;
    shard
        .invoke_on(target, move |s| f(s, key))
        .await
        .map_err(ShareCoordinatorError::Unavailable)?
}

/// InitializeShareGroupState of one share-partition (the group coordinator
/// calls it when the partition is first assigned): writes a ShareSnapshot
/// at `start_offset` with `state_epoch`, on the shard leading the key's
/// state partition. Errors: the rules of `ShareStates::initialize`,
/// LoadInProgress, NotCoordinator, Append, and [`on_owner`]'s.
pub async fn initialize(
    shard: &Rc<Shard>,
    key: StateKey,
    state_epoch: i32,
    start_offset: i64,
) -> Result<(), ShareCoordinatorError> {
    on_owner(shard, key, move |s, k| {
        initialize_here(s, k, state_epoch, start_offset)
    })
    .await
}

/// ReadShareGroupState of one share-partition by its leader at
/// `leader_epoch` (a newer epoch than the state's is written before the
/// answer). Errors: the rules of `ShareStates::read`, LoadInProgress,
/// NotCoordinator, Append, and [`on_owner`]'s.
pub async fn read(
    shard: &Rc<Shard>,
    key: StateKey,
    leader_epoch: i32,
) -> Result<ReadAnswer, ShareCoordinatorError> {
    on_owner(shard, key, move |s, k| read_here(s, k, leader_epoch)).await
}

/// ReadShareGroupStateSummary of one share-partition: (state epoch, leader
/// epoch, start offset). Errors: LoadInProgress, NotCoordinator,
/// INVALID_REQUEST for a negative partition, UNKNOWN_TOPIC_OR_PARTITION,
/// and [`on_owner`]'s.
pub async fn summary(
    shard: &Rc<Shard>,
    key: StateKey,
) -> Result<SummaryAnswer, ShareCoordinatorError> {
    on_owner(shard, key, |s, k| async move { summary_here(&s, &k) }).await
}

/// WriteShareGroupState of one share-partition (its leader, after
/// acknowledgements): a ShareUpdate, or a ShareSnapshot every
/// `share.coordinator.snapshot.update.records.per.snapshot` updates.
/// Errors: the rules of `ShareStates::write`, LoadInProgress,
/// NotCoordinator, Append, and [`on_owner`]'s.
pub async fn write(
    shard: &Rc<Shard>,
    key: StateKey,
    req: WriteRequest,
) -> Result<(), ShareCoordinatorError> {
    on_owner(shard, key, move |s, k| write_here(s, k, req)).await
}

/// DeleteShareGroupState of one share-partition: tombstones for its
/// snapshot and update keys. Errors: LoadInProgress, NotCoordinator,
/// Append, INVALID_REQUEST for a negative partition,
/// UNKNOWN_TOPIC_OR_PARTITION, and [`on_owner`]'s.
pub async fn delete(shard: &Rc<Shard>, key: StateKey) -> Result<(), ShareCoordinatorError> {
    on_owner(shard, key, delete_here).await
}

/// [`initialize`] on the owner shard.
async fn initialize_here(
    shard: Rc<Shard>,
    key: StateKey,
    state_epoch: i32,
    start_offset: i64,
) -> Result<(), ShareCoordinatorError> {
    let turn = here();
    let _permit = turn.writes.acquire_permit(1).await;
    let (part, me) = ready(&shard, &key)?;
    let known = known(&shard, &key);
    let record = me
        .states
        .borrow()
        .initialize(&key, state_epoch, start_offset, known, now_ms())?;
    persist(&me, &part, vec![record]).await
}

/// [`read`] on the owner shard: answered at once when the leader epoch
/// is the state's; a newer one is written first (in its turn).
async fn read_here(
    shard: Rc<Shard>,
    key: StateKey,
    leader_epoch: i32,
) -> Result<ReadAnswer, ShareCoordinatorError> {
    let per_snapshot = shard
        .config
        .share_coordinator
        .snapshot_update_records_per_snapshot;
    let (_, me) = ready(&shard, &key)?;
    let decided = me
        .states
        .borrow()
        .read(&key, leader_epoch, per_snapshot, now_ms())?;
    if decided.1.is_none() {
        return Ok(decided.0);
    }
    let turn = here();
    let _permit = turn.writes.acquire_permit(1).await;
    let (part, me) = ready(&shard, &key)?;
    let (answer, record) = me
        .states
        .borrow()
        .read(&key, leader_epoch, per_snapshot, now_ms())?;
    persist(&me, &part, record.into_iter().collect()).await?;
    Ok(answer)
}

/// [`summary`] on the owner shard.
fn summary_here(shard: &Shard, key: &StateKey) -> Result<SummaryAnswer, ShareCoordinatorError> {
    let (_, me) = ready(shard, key)?;
    let answer = me.states.borrow().summary(key, known(shard, key))?;
    Ok(answer)
}

/// [`write`] on the owner shard.
async fn write_here(
    shard: Rc<Shard>,
    key: StateKey,
    req: WriteRequest,
) -> Result<(), ShareCoordinatorError> {
    let turn = here();
    let _permit = turn.writes.acquire_permit(1).await;
    let (part, me) = ready(&shard, &key)?;
    let per_snapshot = shard
        .config
        .share_coordinator
        .snapshot_update_records_per_snapshot;
    let record = me
        .states
        .borrow()
        .write(&key, &req, per_snapshot, now_ms())?;
    persist(&me, &part, vec![record]).await
}

/// [`delete`] on the owner shard.
async fn delete_here(shard: Rc<Shard>, key: StateKey) -> Result<(), ShareCoordinatorError> {
    let turn = here();
    let _permit = turn.writes.acquire_permit(1).await;
    let (part, me) = ready(&shard, &key)?;
    let records = me.states.borrow().delete(&key, known(&shard, &key))?;
    persist(&me, &part, records).await
}

/// Makes this shard's share coordinator follow the leadership of its
/// `__share_group_state` partitions (start-up, before the first image).
pub fn install(shard: &Shard) {
    shard.add_leadership_listener(Rc::new(StateLeadership));
}

impl ShareCoordinator {
    /// Replays `part` in the background; its keys answer
    /// COORDINATOR_LOAD_IN_PROGRESS until it is loaded. A resignation
    /// during the load stops it.
    fn begin_load(self: &Rc<Self>, shard: &Rc<Shard>, part: Rc<Partition>) {
        let number = self.loads.get() + 1;
        self.loads.set(number);
        let index = part.index();
        self.loading.borrow_mut().insert(index, number);
        let me = self.clone();
        let n = partitions(shard);
        crate::shard::stall::spawn_local("share state load", async move {
            let current = || me.loading.borrow().get(&index) == Some(&number);
            let mut loaded = ShareStates::default();
            let mut count = 0usize;
            crate::shard::fault::hold_load(&part).await;
            let read = replay_log(&part, |records| {
                if !current() {
                    return false;
                }
                for r in records {
                    let Some(k) = r.key.as_deref() else { continue };
                    match ShareStateRecord::decode(k, r.value.as_deref()) {
                        Ok(rec) => {
                            loaded.apply(&rec);
                            count += 1;
                        }
                        Err(e) => log::warn!(
                            "skipping record at offset {} of {}-{index}: {e}",
                            r.offset,
                            part.topic()
                        ),
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
                log::error!("loading {}-{index}: {e}", part.topic());
            }
            log::info!(
                "{}-{index}: loaded {count} record(s): {} share-partition(s)",
                part.topic(),
                loaded.len()
            );
            let mut states = me.states.borrow_mut();
            states.retain(|k| partition_for_key(&coordinator_key(&k.0, k.1, k.2), n) != index);
            states.adopt(loaded);
        })
        .detach();
    }

    /// Forgets the share-partitions of `part`, led by another broker now.
    fn resign(&self, shard: &Shard, part: &Partition) {
        let index = part.index();
        self.loading.borrow_mut().remove(&index);
        let n = partitions(shard);
        let gone = self
            .states
            .borrow_mut()
            .retain(|k| partition_for_key(&coordinator_key(&k.0, k.1, k.2), n) != index);
        if gone > 0 {
            log::info!(
                "{}-{index}: no longer led here; {gone} share-partition(s) unloaded",
                part.topic()
            );
        }
    }
}

/// The share coordinator as the shard's [`LeadershipListener`] for
/// `__share_group_state`.
struct StateLeadership;

impl LeadershipListener for StateLeadership {
    fn became_leader(&self, shard: &Rc<Shard>, part: &Rc<Partition>) {
        if &**part.topic() == SHARE_GROUP_STATE_TOPIC {
            here().begin_load(shard, part.clone());
        }
    }

    fn resigned(&self, shard: &Rc<Shard>, part: &Rc<Partition>) {
        if &**part.topic() == SHARE_GROUP_STATE_TOPIC {
            here().resign(shard, part);
        }
    }
}
