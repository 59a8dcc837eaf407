//! The group coordinator on its shard: the glue between the requests, the
//! pure core ([`GroupCore`]: `membership`, `offsets`) and the shard. It owns
//! the core, keeps the response channels of parked JoinGroups and SyncGroups,
//! appends the core's records to `__consumer_offsets`, and runs the timers
//! the core asks for (one glommio sleep per armed deadline; nothing polls).
//! Results are typed [`GroupError`]s; the handlers map them to Kafka codes.
//!
//! One coordinator per shard thread ([`GroupCoordinator::here`], a
//! per-shard service as Seastar's `sharded<T>`): it holds the groups of the
//! `__consumer_offsets` partitions this shard owns and this broker leads.
//! It follows their leadership as a listener the shard calls
//! ([`GroupCoordinator::install`]): a partition led here is loaded in the
//! background, one chunk of the log at a time read off the reactor, and its
//! groups answer COORDINATOR_LOAD_IN_PROGRESS until it is loaded (Kafka's
//! behaviour while it loads a partition); a partition no longer led here is
//! unloaded.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::time::Duration;

use futures_channel::oneshot;

use super::error::GroupError;
use super::load;
use super::membership::{Effect, GroupCore, LeaveOutcome, OffsetsTopicRecord};
use super::offsets;
use super::records;
use super::state::{MemberIdSource, RequestHandle};
use super::*;
use crate::shard::internal::{append_records, replay_log};
use crate::shard::listener::LeadershipListener;
use crate::shard::partition::Partition;
use crate::shard::{now_ms, Shard};

/// Groups and committed offsets of the `__consumer_offsets` partitions this
/// shard owns, and the parked requests.
pub struct GroupCoordinator {
    pub(super) core: RefCell<GroupCore>,
    joins: RefCell<HashMap<RequestHandle, oneshot::Sender<JoinResult>>>,
    syncs: RefCell<HashMap<RequestHandle, oneshot::Sender<SyncResult>>>,
    next_handle: Cell<u64>,
    /// `__consumer_offsets` partitions being loaded, each with the number
    /// of its load (a load that finds another number was superseded).
    loading: RefCell<HashMap<i32, u64>>,
    /// The number of the last load started.
    loads: Cell<u64>,
    /// The metadata offset of the newest `RemoveTopic` whose topic's
    /// offsets were tombstoned ([`sweep_deleted_topics`]); None before the
    /// first image.
    removals_seen: Cell<Option<u64>>,
}

thread_local! {
    /// The group coordinator of the shard running on this thread.
    static HERE: Rc<GroupCoordinator> = Rc::new(GroupCoordinator::default());
}

impl Default for GroupCoordinator {
    /// No groups yet; new members are named `client_id-UUID` with a random
    /// (v4) UUID, as Kafka names them.
    fn default() -> GroupCoordinator {
        let mut core = GroupCore::default();
        core.member_ids = MemberIdSource::new(|| uuid::Uuid::new_v4().to_string());
        GroupCoordinator {
            core: RefCell::new(core),
            joins: RefCell::default(),
            syncs: RefCell::default(),
            next_handle: Cell::default(),
            loading: RefCell::default(),
            loads: Cell::default(),
            removals_seen: Cell::new(None),
        }
    }
}

impl GroupCoordinator {
    fn handle(&self) -> RequestHandle {
        let n = self.next_handle.get().wrapping_add(1);
        self.next_handle.set(n);
        RequestHandle(n)
    }

    /// The group coordinator of the shard running on this thread.
    pub fn here() -> Rc<GroupCoordinator> {
        HERE.with(Rc::clone)
    }

    /// Makes this shard's coordinator follow the leadership of its
    /// `__consumer_offsets` partitions (start-up, before the first image).
    pub fn install(shard: &Shard) {
        shard.add_leadership_listener(Rc::new(OffsetsLeadership));
    }

    /// Whether `group_id`'s `__consumer_offsets` partition (of
    /// `offsets.topic.num.partitions` = `partitions`) is still loading.
    fn loading_group(&self, group_id: &str, partitions: i32) -> bool {
        let p = records::partition_for_group(group_id, partitions);
        self.loading.borrow().contains_key(&p)
    }

    /// Whether any `__consumer_offsets` partition of this shard is loading.
    pub fn any_loading(&self) -> bool {
        !self.loading.borrow().is_empty()
    }

    /// Starts loading `part` (a `__consumer_offsets` partition this broker
    /// now leads) in the background: the log is replayed from its start to
    /// its end (see [`load::replay_record`]) one chunk at a time, read off
    /// the reactor; meanwhile its groups answer COORDINATOR_LOAD_IN_PROGRESS.
    /// Once loaded, the sessions of the members found start (they expire
    /// unless their consumers heartbeat). A resignation during the load
    /// stops it.
    fn begin_load(self: &Rc<Self>, shard: &Rc<Shard>, part: Rc<Partition>) {
        let number = self.loads.get() + 1;
        self.loads.set(number);
        let index = part.index();
        self.loading.borrow_mut().insert(index, number);
        let me = self.clone();
        let n = shard.config.group.offsets_topic_partitions;
        let shard = shard.clone();
        crate::shard::stall::spawn_local("group load", async move {
            let current = || me.loading.borrow().get(&index) == Some(&number);
            // Replayed apart and adopted whole: no timer or request sees a
            // group half loaded.
            let mut staged = GroupCore::default();
            let mut loaded = 0usize;
            crate::shard::fault::hold_load(&part).await;
            let read = replay_log(&part, |records| {
                if !current() {
                    return false;
                }
                let now = now_ms();
                for r in records {
                    if load::replay_record(&mut staged, r, index, n, now) {
                        loaded += 1;
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
                // The groups read before the error are kept, as Kafka's
                // coordinator keeps what it loaded before an unreadable
                // batch.
                log::error!("loading {}-{index}: {e}", part.topic());
            }
            let mut consumer_timers = Vec::new();
            staged.consumer.arm_after_load_with(
                &|group_id| super::consumer_coordinator::consumer_config_of(&shard, group_id),
                now_ms(),
                &mut consumer_timers,
            );
            consumer_timers.extend(super::share_group_coordinator::arm_after_load(
                &shard,
                &mut staged,
            ));
            apply(&shard, consumer_timers);
            let effects = {
                let mut core = me.core.borrow_mut();
                core.adopt(staged);
                core.arm_partition(index, n, now_ms());
                core.take_effects()
            };
            apply(&shard, effects);
            log::info!(
                "{}-{index}: loaded {loaded} group and offset record(s)",
                part.topic()
            );
            // Offsets the log still holds for topics deleted since (a
            // deletion made while this broker did not lead the partition).
            tombstone_offsets(&shard, absent_removed_topics(&shard));
        })
        .detach();
    }

    /// This broker stopped leading `part` (a `__consumer_offsets`
    /// partition): a load in progress stops, its groups are unloaded
    /// ([`GroupCore::unload_partition`]) and their parked requests answered.
    fn resign(&self, shard: &Rc<Shard>, part: &Partition) {
        let n = shard.config.group.offsets_topic_partitions;
        self.loading.borrow_mut().remove(&part.index());
        let (unloaded, effects) = {
            let mut core = self.core.borrow_mut();
            let unloaded = core.unload_partition(part.index(), n);
            (unloaded, core.take_effects())
        };
        apply(shard, effects);
        if unloaded > 0 {
            log::info!(
                "{}-{}: no longer led here; {unloaded} group(s) unloaded",
                part.topic(),
                part.index()
            );
        }
    }

    /// Ends a transaction's offset commits on `__consumer_offsets` partition
    /// `partition` where its COMMIT/ABORT marker was written (see
    /// [`GroupCore::complete_txn`]); `partitions` is
    /// `offsets.topic.num.partitions`.
    pub fn complete_txn(&self, producer_id: i64, partition: i32, partitions: i32, commit: bool) {
        self.core
            .borrow_mut()
            .complete_txn(producer_id, partition, partitions, commit, now_ms());
    }

    /// Starts the offsets retention timer
    /// (`offsets.retention.check.interval.ms`) of this shard (start-up).
    pub fn start(shard: &Rc<Shard>) {
        let me = Rc::downgrade(shard);
        let every = Duration::from_millis(
            shard
                .config
                .group
                .offsets_retention_check_interval_ms
                .max(1),
        );
        crate::shard::stall::spawn_local("offsets retention", async move {
            loop {
                glommio::timer::sleep(every).await;
                let Some(shard) = me.upgrade() else { break };
                expire_offsets(&shard).await;
            }
        })
        .detach();
    }
}

/// The group coordinator as the shard's [`LeadershipListener`] for
/// `__consumer_offsets`.
struct OffsetsLeadership;

impl LeadershipListener for OffsetsLeadership {
    fn became_leader(&self, shard: &Rc<Shard>, part: &Rc<Partition>) {
        if &**part.topic() == OFFSETS_TOPIC {
            GroupCoordinator::here().begin_load(shard, part.clone());
        }
    }

    fn resigned(&self, shard: &Rc<Shard>, part: &Rc<Partition>) {
        if &**part.topic() == OFFSETS_TOPIC {
            GroupCoordinator::here().resign(shard, part);
        }
    }

    fn topics_changed(&self, shard: &Rc<Shard>) {
        sweep_deleted_topics(shard);
        super::consumer_coordinator::topics_changed(shard);
        super::share_group_coordinator::topics_changed(shard);
    }
}

// ------------------------------------------------------- deleted topics

/// The names of deleted topics (the image's `RemovedTopic`s) that no topic
/// of the image carries now.
fn absent_removed_topics(shard: &Shard) -> HashSet<String> {
    let image = shard.metadata();
    image
        .removed_topics
        .values()
        .filter(|r| image.topic(&r.name).is_none())
        .map(|r| r.name.clone())
        .collect()
}

/// A new image: the committed offsets of topics deleted since the last one
/// are tombstoned in every group of this shard (Kafka's
/// `GroupCoordinator.onPartitionsDeleted`), also when a topic of the same
/// name was created again since. At the first image only the deleted
/// topics absent from it are swept: an older deletion of a name in use
/// again was swept when it happened.
fn sweep_deleted_topics(shard: &Rc<Shard>) {
    let me = GroupCoordinator::here();
    let image = shard.metadata();
    let newest = image.removed_topics.values().map(|r| r.offset).max();
    let names = match me.removals_seen.get() {
        None => absent_removed_topics(shard),
        Some(seen) => image
            .removed_topics
            .values()
            .filter(|r| r.offset > seen)
            .map(|r| r.name.clone())
            .collect(),
    };
    let seen = me.removals_seen.get().unwrap_or(0);
    me.removals_seen.set(Some(newest.unwrap_or(0).max(seen)));
    tombstone_offsets(shard, names);
}

/// Appends the tombstones of every committed offset of `topics` in this
/// shard's groups, then forgets them (in the background).
fn tombstone_offsets(shard: &Rc<Shard>, topics: HashSet<String>) {
    if topics.is_empty() {
        return;
    }
    let me = GroupCoordinator::here();
    let plans = match me.core.try_borrow() {
        Ok(core) => core.plan_deleted_topics(&topics),
        Err(_) => {
            log::warn!(
                "groups busy: offsets of deleted topics {topics:?} kept until the next image"
            );
            return;
        }
    };
    if plans.is_empty() {
        return;
    }
    let shard = shard.clone();
    crate::shard::stall::spawn_local("deleted topics' offsets", async move {
        for e in plans {
            match write_records(&shard, &e.group_id, e.records(), None).await {
                Ok(()) => {
                    log::info!(
                        "group {}: removed {} committed offset(s) of deleted topics",
                        e.group_id,
                        e.partitions.len()
                    );
                    let effects = {
                        let mut core = me.core.borrow_mut();
                        core.apply_expiry(&e);
                        core.take_effects()
                    };
                    apply(&shard, effects);
                }
                Err(err) => log::warn!(
                    "group {}: offsets of deleted topics not removed: {err}",
                    e.group_id
                ),
            }
        }
    })
    .detach();
}

// ---------------------------------------------------------------- effects

/// Appends `records` to the group's `__consumer_offsets` partition and waits
/// for the flush policy. COORDINATOR_NOT_AVAILABLE when the partition is not
/// on this shard; the append's own error code otherwise.
pub(super) async fn write_records(
    shard: &Rc<Shard>,
    group_id: &str,
    records: Vec<OffsetsTopicRecord>,
    producer: Option<(i64, i16)>,
) -> Result<(), GroupError> {
    if records.is_empty() {
        return Ok(());
    }
    let p = records::partition_for_group(group_id, shard.config.group.offsets_topic_partitions);
    let Some(part) = shard.partition(OFFSETS_TOPIC, p) else {
        return Err(GroupError::CoordinatorNotAvailable);
    };
    append_records(&part, records, producer)
        .await
        .map(|_| ())
        .map_err(|e| {
            log::warn!("append to __consumer_offsets for group {group_id} failed: {e}");
            GroupError::Append((&e).into())
        })
}

/// Applies the core's effects in order: answers parked requests, starts the
/// appends and arms the timers.
pub(super) fn apply(shard: &Rc<Shard>, effects: Vec<Effect>) {
    for effect in effects {
        match effect {
            Effect::Join { handle, result } => {
                if let Some(tx) = GroupCoordinator::here().joins.borrow_mut().remove(&handle) {
                    let _ = tx.send(result);
                }
            }
            Effect::Sync { handle, result } => {
                if let Some(tx) = GroupCoordinator::here().syncs.borrow_mut().remove(&handle) {
                    let _ = tx.send(result);
                }
            }
            Effect::Persist { group_id, record } => {
                let s = shard.clone();
                crate::shard::stall::spawn_local("group persist", async move {
                    if let Err(e) = write_records(&s, &group_id, vec![record], None).await {
                        log::warn!("could not persist group {group_id}: {e}");
                    }
                })
                .detach();
            }
            Effect::StoreAssignment {
                group_id,
                generation,
                record,
            } => {
                let s = shard.clone();
                crate::shard::stall::spawn_local("group assignment", async move {
                    let stored = write_records(&s, &group_id, vec![record], None).await;
                    let groups = GroupCoordinator::here();
                    let effects = {
                        let mut core = groups.core.borrow_mut();
                        core.assignment_stored(
                            &s.config.group,
                            &group_id,
                            generation,
                            stored,
                            now_ms(),
                        );
                        core.take_effects()
                    };
                    apply(&s, effects);
                })
                .detach();
            }
            Effect::Timer { group_id, at_ms } => {
                let me = Rc::downgrade(shard);
                let wait = Duration::from_millis((at_ms - now_ms()).max(0) as u64);
                crate::shard::stall::spawn_local("group timer", async move {
                    glommio::timer::sleep(wait).await;
                    let Some(s) = me.upgrade() else { return };
                    let groups = GroupCoordinator::here();
                    let effects = {
                        let mut core = groups.core.borrow_mut();
                        if core.consumer.contains(&group_id) {
                            super::consumer_coordinator::on_deadline(&s, &mut core, &group_id)
                        } else if core.share.contains(&group_id) {
                            super::share_group_coordinator::on_deadline(&s, &mut core, &group_id)
                        } else {
                            core.on_deadline(&s.config.group, &group_id, at_ms, now_ms());
                            core.take_effects()
                        }
                    };
                    apply(&s, effects);
                })
                .detach();
            }
        }
    }
}

/// This shard's coordinator, if `group_id`'s `__consumer_offsets`
/// partition is loaded; COORDINATOR_LOAD_IN_PROGRESS (14) while it loads.
pub(super) fn ready(shard: &Shard, group_id: &str) -> Result<Rc<GroupCoordinator>, GroupError> {
    let groups = GroupCoordinator::here();
    if groups.loading_group(group_id, shard.config.group.offsets_topic_partitions) {
        return Err(GroupError::CoordinatorLoadInProgress);
    }
    Ok(groups)
}

// ---------------------------------------------------------------- membership

/// Handles a JoinGroup on the coordinator shard; resolves when the member's
/// join completes (possibly after a rebalance).
pub async fn join(shard: Rc<Shard>, args: JoinArgs) -> JoinResult {
    let groups = match ready(&shard, &args.group_id) {
        Ok(g) => g,
        Err(e) => return JoinResult::error(e, &args.member_id),
    };
    // One group namespace: a share group is of another protocol
    // (INCONSISTENT_GROUP_PROTOCOL, as Kafka 4.4 answers); a consumer group
    // with members answers classic members itself; an empty one gives way
    // to the classic group.
    if groups.core.borrow().share.contains(&args.group_id) {
        return JoinResult::error(GroupError::InconsistentGroupProtocol, &args.member_id);
    }
    if groups.core.borrow().consumer.has_members(&args.group_id) {
        return super::migration::classic_join(shard, args).await;
    }
    {
        let mut core = groups.core.borrow_mut();
        if core.consumer.contains(&args.group_id) {
            super::migration::replace_empty(&shard, &mut core, &args.group_id);
        }
    }
    let handle = groups.handle();
    let (tx, rx) = oneshot::channel();
    groups.joins.borrow_mut().insert(handle, tx);
    let effects = {
        let mut core = groups.core.borrow_mut();
        core.join(&shard.config.group, &args, handle, now_ms());
        core.take_effects()
    };
    apply(&shard, effects);
    rx.await
        .unwrap_or_else(|_| GroupCore::unanswered_join(&args))
}

/// Handles a SyncGroup; the leader's call distributes the assignment once
/// it is stored.
pub async fn sync(shard: Rc<Shard>, args: SyncArgs) -> SyncResult {
    let groups = match ready(&shard, &args.group_id) {
        Ok(g) => g,
        Err(e) => return SyncResult::error(e),
    };
    {
        let mut core = groups.core.borrow_mut();
        if core.consumer.contains(&args.group_id) {
            return super::migration::classic_sync(&shard, &mut core, &args);
        }
    }
    let handle = groups.handle();
    let (tx, rx) = oneshot::channel();
    groups.syncs.borrow_mut().insert(handle, tx);
    let effects = {
        let mut core = groups.core.borrow_mut();
        core.sync(&args, handle, now_ms());
        core.take_effects()
    };
    apply(&shard, effects);
    rx.await.unwrap_or_else(|_| GroupCore::unanswered_sync())
}

/// Handles a Heartbeat (see [`GroupCore::heartbeat`]).
pub fn heartbeat(
    shard: &Rc<Shard>,
    group_id: &str,
    generation: i32,
    member_id: &str,
    instance: &Option<String>,
) -> Result<(), GroupError> {
    let groups = ready(shard, group_id)?;
    let mut core = groups.core.borrow_mut();
    if core.consumer.contains(group_id) {
        return super::migration::classic_heartbeat(
            shard, &mut core, group_id, generation, member_id, instance,
        );
    }
    core.heartbeat(group_id, generation, member_id, instance, now_ms())
}

/// Handles a LeaveGroup (see [`GroupCore::leave`]).
pub fn leave(shard: &Rc<Shard>, group_id: &str, members: Vec<LeavingMember>) -> LeaveOutcome {
    let groups = match ready(shard, group_id) {
        Ok(g) => g,
        Err(e) => {
            return LeaveOutcome {
                error: Some(e),
                members: Vec::new(),
            }
        }
    };
    let (outcome, effects) = {
        let mut core = groups.core.borrow_mut();
        if core.consumer.contains(group_id) {
            return super::migration::classic_leave(shard, &mut core, group_id, members);
        }
        let o = core.leave(&shard.config.group, group_id, members, now_ms());
        (o, core.take_effects())
    };
    apply(shard, effects);
    outcome
}

// ---------------------------------------------------------------- offsets

/// First step of a TxnOffsetCommit, before the transaction coordinator is
/// asked: notes on the group's `__consumer_offsets` partition that (producer
/// id, epoch) is being verified, so that [`txn_commit`] can tell whether the
/// transaction's marker was written in between (Kafka's VerificationGuard,
/// KIP-890). COORDINATOR_NOT_AVAILABLE when the partition is not on this
/// shard.
pub fn begin_txn_commit(
    shard: &Rc<Shard>,
    group_id: &str,
    producer: (i64, i16),
) -> Result<(), GroupError> {
    ready(shard, group_id)?;
    let p = records::partition_for_group(group_id, shard.config.group.offsets_topic_partitions);
    let part = shard
        .partition(OFFSETS_TOPIC, p)
        .ok_or(GroupError::CoordinatorNotAvailable)?;
    part.begin_txn_verification(producer.0, producer.1);
    Ok(())
}

/// Handles a TxnOffsetCommit (KIP-98, KIP-447): the offsets are written to
/// `__consumer_offsets` as a transactional batch of `producer` (id, epoch)
/// and become the group's committed offsets only when the transaction's
/// COMMIT marker is written there (see [`GroupCoordinator::complete_txn`]).
/// A producer epoch older than the one the partition knows gives
/// PRODUCER_FENCED. Gives one result per partition, in order.
pub async fn txn_commit(
    shard: Rc<Shard>,
    group_id: String,
    producer: (i64, i16),
    generation: i32,
    member_id: String,
    instance: Option<String>,
    partitions: Vec<CommitPartition>,
) -> Vec<Result<(), GroupError>> {
    let p = records::partition_for_group(&group_id, shard.config.group.offsets_topic_partitions);
    if let Some(part) = shard.partition(OFFSETS_TOPIC, p) {
        let known = part.producer_epoch(producer.0);
        let take = || part.take_txn_verification(producer.0, producer.1);
        if let Err(e) = offsets::check_txn_producer(producer, known, take) {
            return vec![Err(e); partitions.len()];
        }
    }
    commit_offsets(
        shard,
        group_id,
        generation,
        member_id,
        instance,
        partitions,
        Some(producer),
        UnknownGroup::IllegalGeneration,
    )
    .await
}

/// Handles an OffsetCommit (`unknown`: the answer for a group that does
/// not exist, by request version); gives one result per partition, in order.
pub async fn commit(
    shard: Rc<Shard>,
    group_id: String,
    generation: i32,
    member_id: String,
    instance: Option<String>,
    partitions: Vec<CommitPartition>,
    unknown: UnknownGroup,
) -> Vec<Result<(), GroupError>> {
    commit_offsets(
        shard, group_id, generation, member_id, instance, partitions, None, unknown,
    )
    .await
}

#[allow(clippy::too_many_arguments)]
async fn commit_offsets(
    shard: Rc<Shard>,
    group_id: String,
    generation: i32,
    member_id: String,
    instance: Option<String>,
    partitions: Vec<CommitPartition>,
    producer: Option<(i64, i16)>,
    unknown: UnknownGroup,
) -> Vec<Result<(), GroupError>> {
    let groups = match ready(&shard, &group_id) {
        Ok(g) => g,
        Err(e) => return vec![Err(e); partitions.len()],
    };
    let mut partitions = partitions;
    super::consumer_coordinator::check_commit(
        &shard,
        &groups.core.borrow(),
        &group_id,
        &member_id,
        generation,
        &mut partitions,
    );
    let mut plan = groups.core.borrow_mut().plan_commit(
        shard.config.group.offset_metadata_max_bytes,
        &group_id,
        generation,
        &member_id,
        &instance,
        &partitions,
        producer.map(|(pid, _)| pid),
        unknown,
        now_ms(),
    );
    let records = std::mem::take(&mut plan.records);
    if let Err(e) = write_records(&shard, &group_id, records, producer).await {
        return plan.failed(&e);
    }
    crate::metrics::coordinator::count_offset_commits(plan.accepted.len());
    if producer.is_none() {
        let accepted = std::mem::take(&mut plan.accepted);
        groups.core.borrow_mut().apply_commit(&group_id, accepted);
    }
    plan.results
}

/// Committed offsets of a group (see [`GroupCore::fetch_offsets`]), or
/// COORDINATOR_LOAD_IN_PROGRESS for the whole group. `member`: the member
/// id and epoch of an OffsetFetch v9+, checked when the group is a
/// consumer group (KIP-848: UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH).
pub fn fetch_offsets(
    shard: &Rc<Shard>,
    group_id: &str,
    wanted: Option<Vec<(String, i32)>>,
    require_stable: bool,
    member: Option<(String, i32)>,
) -> Result<Vec<FetchedOffset>, GroupError> {
    let groups = ready(shard, group_id)?;
    let core = groups.core.borrow();
    if let Some((member_id, epoch)) = member {
        super::consumer_coordinator::check_fetch(&core, group_id, &member_id, epoch)?;
    }
    Ok(core.fetch_offsets(group_id, wanted, require_stable))
}

/// OffsetDelete: removes committed offsets of partitions the group is not
/// subscribed to (a consumer group's members' subscriptions, KIP-848, or a
/// classic group's). Gives the per-partition results, or the group's error.
pub async fn delete_offsets(
    shard: Rc<Shard>,
    group_id: String,
    partitions: Vec<(String, i32)>,
) -> Result<Vec<Result<(), GroupError>>, GroupError> {
    let groups = ready(&shard, &group_id)?;
    let mut plan = {
        let core = groups.core.borrow();
        let topics = super::consumer_coordinator::ImageTopics(shard.metadata());
        match core.consumer.subscribed_topics(&group_id, &topics) {
            Some(subscribed) => {
                core.plan_delete_consumer_offsets(&group_id, &partitions, &subscribed)
            }
            None => core.plan_delete_offsets(&group_id, &partitions)?,
        }
    };
    let records = std::mem::take(&mut plan.records);
    write_records(&shard, &group_id, records, None).await?;
    groups
        .core
        .borrow_mut()
        .apply_delete_offsets(&group_id, &plan.removed);
    Ok(plan.results)
}

// ---------------------------------------------------------------- admin

/// DescribeGroups for one group, or COORDINATOR_LOAD_IN_PROGRESS.
pub fn describe(shard: &Rc<Shard>, group_id: &str) -> Result<GroupDescription, GroupError> {
    Ok(ready(shard, group_id)?.core.borrow().describe(group_id))
}

/// The committed offsets of the groups this shard coordinates, and its
/// classic groups counted by (state, protocol type): the figures of the
/// metrics endpoint.
pub fn metrics_figures() -> (
    Vec<crate::metrics::shard::CommittedOffset>,
    Vec<crate::metrics::shard::GroupCount>,
) {
    let here = GroupCoordinator::here();
    let Ok(core) = here.core.try_borrow() else {
        return (Vec::new(), Vec::new());
    };
    let committed = core
        .offsets
        .committed
        .iter()
        .flat_map(|(g, m)| {
            m.iter()
                .map(move |((t, p), v)| crate::metrics::shard::CommittedOffset {
                    group: g.clone(),
                    topic: t.clone(),
                    partition: *p,
                    offset: v.offset,
                })
        })
        .collect();
    let mut by: std::collections::BTreeMap<(&'static str, String), u64> = Default::default();
    for g in core.groups.values() {
        let key = (
            g.state.as_str(),
            g.protocol_type.clone().unwrap_or_default(),
        );
        *by.entry(key).or_default() += 1;
    }
    let groups = by.into_iter().map(|((s, p), n)| (s, p, n)).collect();
    (committed, groups)
}

/// The consumer (KIP-848) and share groups this shard coordinates,
/// counted by state: the figures of the metrics endpoint.
pub fn group_states() -> crate::metrics::coordinator::GroupStates {
    let mut out = crate::metrics::coordinator::GroupStates::default();
    let here = GroupCoordinator::here();
    let Ok(core) = here.core.try_borrow() else {
        return out;
    };
    for (_, state) in core.consumer.list() {
        *out.consumer.entry(state.as_str()).or_default() += 1;
    }
    for (_, state) in core.share.list() {
        *out.share.entry(state.as_str()).or_default() += 1;
    }
    out
}

/// ListGroups on this shard (see [`GroupCore::list`]), or
/// COORDINATOR_LOAD_IN_PROGRESS while one of its `__consumer_offsets`
/// partitions loads (as Kafka answers ListGroups then).
pub fn list(states: &[String], types: &[String]) -> Result<Vec<ListedGroup>, GroupError> {
    let groups = GroupCoordinator::here();
    if groups.any_loading() {
        return Err(GroupError::CoordinatorLoadInProgress);
    }
    let listed = groups.core.borrow().list(states, types);
    Ok(listed)
}

/// DeleteGroups for one group: only an Empty group; writes tombstones for
/// its offsets and metadata (see [`GroupCore::plan_delete_group`], and
/// [`GroupCore::begin_delete_consumer_group`] for a consumer group).
pub async fn delete_group(shard: Rc<Shard>, group_id: String) -> Result<(), GroupError> {
    let groups = ready(&shard, &group_id)?;
    if super::share_group_coordinator::delete(&shard, &group_id).await? {
        return Ok(());
    }
    let consumer = groups
        .core
        .borrow_mut()
        .begin_delete_consumer_group(&group_id)?;
    if let Some((records, taken)) = consumer {
        if let Err(e) = write_records(&shard, &group_id, records, None).await {
            // Put back only while its partition is still led and loaded
            // here (a resignation during the append unloaded its groups).
            let p = records::partition_for_group(
                &group_id,
                shard.config.group.offsets_topic_partitions,
            );
            let led = shard
                .partition(OFFSETS_TOPIC, p)
                .is_some_and(|part| part.is_leader());
            if led && ready(&shard, &group_id).is_ok() {
                groups.core.borrow_mut().abort_delete_consumer_group(taken);
            }
            return Err(e);
        }
        groups
            .core
            .borrow_mut()
            .apply_delete_consumer_group(&group_id);
        log::info!("consumer group {group_id} deleted");
        return Ok(());
    }
    let records = groups
        .core
        .borrow_mut()
        .begin_delete_group(&group_id, now_ms())?;
    if let Err(e) = write_records(&shard, &group_id, records, None).await {
        let mut core = groups.core.borrow_mut();
        core.abort_delete_group(&group_id, now_ms());
        return Err(e);
    }
    let effects = {
        let mut core = groups.core.borrow_mut();
        core.apply_delete_group(&group_id, now_ms());
        core.take_effects()
    };
    apply(&shard, effects);
    log::info!("group {group_id} deleted");
    Ok(())
}

/// Expires the offsets whose retention passed (see
/// [`GroupCore::plan_expiry`]).
async fn expire_offsets(shard: &Rc<Shard>) {
    let retention = shard.config.group.offsets_retention_ms;
    let groups = GroupCoordinator::here();
    let expiries = groups.core.borrow().plan_expiry(retention, now_ms());
    for e in expiries {
        if write_records(shard, &e.group_id, e.records(), None)
            .await
            .is_ok()
        {
            log::info!(
                "expired {} committed offset(s) of group {}{}",
                e.partitions.len(),
                e.group_id,
                if e.whole_group { "; group removed" } else { "" }
            );
            let effects = {
                let mut core = groups.core.borrow_mut();
                core.apply_expiry(&e);
                core.take_effects()
            };
            apply(shard, effects);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shard glue names members `client_id-UUID` (a random v4 UUID), as
    /// Kafka does.
    #[test]
    fn the_glue_names_members_with_random_uuids() {
        let c = GroupCoordinator::default();
        let ids: Vec<String> = (0..2)
            .map(|_| c.core.borrow_mut().member_ids.member_id("client"))
            .collect();
        for id in &ids {
            let uuid = id.strip_prefix("client-").unwrap_or_default();
            assert_eq!(
                uuid::Uuid::parse_str(uuid).map(|u| u.get_version_num()),
                Ok(4),
                "{id}"
            );
        }
        assert_ne!(ids[0], ids[1]);
    }
}
