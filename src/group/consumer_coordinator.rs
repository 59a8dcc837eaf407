//! The consumer group protocol (KIP-848) on the coordinator shard: the
//! glue between ConsumerGroupHeartbeat / ConsumerGroupDescribe and the pure
//! state machine ([`super::consumer::ConsumerGroups`], held in the shard's
//! [`GroupCore`] beside the classic groups: one group namespace). A
//! heartbeat's records are appended to the group's `__consumer_offsets`
//! partition before it is answered, as Kafka answers only once its records
//! are written; a failed append is the heartbeat's error.

use std::rc::Rc;
use std::sync::Arc;

use uuid::Uuid;

use super::consumer::records::ConsumerRecord;
use super::consumer::{
    ConsumerGroupConfig, DescribedGroup, HeartbeatAnswer, HeartbeatArgs, TopicInfo, TopicsView,
};
use super::coordinator::{apply, ready, write_records, GroupCoordinator};
use super::error::GroupError;
use super::membership::GroupCore;
use super::GroupConfig;
use crate::cluster::metadata::MetadataImage;
use crate::shard::{now_ms, Shard};

/// The metadata image's topics as the consumer group state machine reads
/// them (internal topics left out of regex matches).
pub struct ImageTopics(pub Arc<MetadataImage>);

impl TopicsView for ImageTopics {
    fn by_name(&self, name: &str) -> Option<TopicInfo> {
        self.0.topic(name).map(|t| TopicInfo {
            id: t.id,
            name: t.name.to_string(),
            partitions: t.partitions,
        })
    }

    fn by_id(&self, id: Uuid) -> Option<TopicInfo> {
        self.0.topic_by_id(&id).map(|t| TopicInfo {
            id: t.id,
            name: t.name.to_string(),
            partitions: t.partitions,
        })
    }

    fn names(&self) -> Vec<String> {
        self.0
            .topics
            .keys()
            .filter(|n| !n.starts_with("__"))
            .map(|n| n.to_string())
            .collect()
    }

    fn version(&self) -> i64 {
        i64::try_from(self.0.offset).unwrap_or(i64::MAX)
    }
}

/// The consumer group settings from the broker's `group.consumer.*` keys.
pub fn consumer_config(cfg: &GroupConfig) -> ConsumerGroupConfig {
    ConsumerGroupConfig {
        heartbeat_interval_ms: cfg.consumer_heartbeat_interval_ms,
        session_timeout_ms: cfg.consumer_session_timeout_ms,
        max_size: cfg.consumer_max_size,
        assignment_interval_ms: i64::from(cfg.consumer_assignment_interval_ms),
        ..ConsumerGroupConfig::default()
    }
}

/// Kafka's message for a group of another type (GROUP_ID_NOT_FOUND).
pub fn not_a_consumer_group(group_id: &str) -> String {
    format!("Group {group_id} is not a consumer group.")
}

/// Handles a ConsumerGroupHeartbeat on the group's coordinator shard: the
/// state machine's answer once the records it gave are appended. Errors as
/// the state machine's (with Kafka's message), COORDINATOR_LOAD_IN_PROGRESS
/// while the partition loads, GROUP_ID_NOT_FOUND for a live classic group
/// of that id, or the append's error.
pub async fn heartbeat(
    shard: Rc<Shard>,
    args: HeartbeatArgs,
) -> Result<HeartbeatAnswer, (GroupError, Option<String>)> {
    let groups = ready(&shard, &args.group_id).map_err(|e| (e, None))?;
    let group_id = args.group_id.clone();
    let topics = ImageTopics(shard.metadata());
    let cfg = consumer_config_of(&shard, &group_id);
    let mut effects = Vec::new();
    let (outcome, records) = {
        let mut guard = groups.core.borrow_mut();
        let core = &mut *guard;
        if core.share.contains(&group_id) {
            return Err((
                GroupError::GroupIdNotFound,
                Some(not_a_consumer_group(&group_id)),
            ));
        }
        // A classic group of this id: an empty one gives way, a live one is
        // converted (online upgrade) or the heartbeat is refused.
        let mut records =
            match super::migration::upgrade(&shard, core, &group_id, &topics, &mut effects) {
                Ok(r) => r,
                Err(e) => return Err(e),
            };
        let leaving = args.member_epoch == -1;
        let had_consumer = super::migration::has_consumer_member(core, &group_id);
        let outcome = core.consumer.heartbeat(
            &cfg,
            args,
            &topics,
            &mut core.member_ids,
            now_ms(),
            &mut effects,
        );
        records.extend(outcome.records.iter().map(ConsumerRecord::encode));
        if leaving && outcome.result.is_ok() {
            records.extend(super::migration::maybe_downgrade(
                &shard,
                core,
                &group_id,
                had_consumer,
                &topics,
                &mut effects,
            ));
        }
        (outcome, records)
    };
    apply(&shard, effects);
    write_records(&shard, &group_id, records, None)
        .await
        .map_err(|e| (e, None))?;
    outcome.result
}

/// A consumer group deadline (session or rebalance timeout) came: the
/// state machine fences who expired and its records are appended (nothing
/// waits for them; a failure is logged). Gives the timers to arm.
pub fn on_deadline(
    shard: &Rc<Shard>,
    core: &mut GroupCore,
    group_id: &str,
) -> Vec<super::membership::Effect> {
    let topics = ImageTopics(shard.metadata());
    let cfg = consumer_config_of(shard, group_id);
    let mut effects = Vec::new();
    let had_consumer = super::migration::has_consumer_member(core, group_id);
    let records = core
        .consumer
        .on_deadline(&cfg, group_id, &topics, now_ms(), &mut effects);
    let mut records: Vec<_> = records.iter().map(ConsumerRecord::encode).collect();
    records.extend(super::migration::maybe_downgrade(
        shard,
        core,
        group_id,
        had_consumer,
        &topics,
        &mut effects,
    ));
    persist_encoded(shard, group_id, records);
    effects
}

/// The applied metadata image changed the topics: the consumer groups of
/// this shard's loaded `__consumer_offsets` partitions subscribed to a
/// changed topic (or whose regexes now match other topics) bump their epoch
/// and get a new target; each group's records are appended in order, in
/// the background, and the timers armed. Nothing when the shard holds no
/// consumer group.
pub fn topics_changed(shard: &Rc<Shard>) {
    let groups = GroupCoordinator::here();
    let mut effects = Vec::new();
    let records = {
        // Images are applied from the shard's own tasks, never while the
        // core is borrowed; were it so, the groups would take the change at
        // their next epoch bump.
        let Ok(mut core) = groups.core.try_borrow_mut() else {
            log::warn!("consumer groups busy: topic change not applied now");
            return;
        };
        if core.consumer.is_empty() {
            return;
        }
        let topics = ImageTopics(shard.metadata());
        core.consumer
            .topics_changed(&topics, now_ms(), &mut effects)
    };
    let mut by_group: Vec<(String, Vec<ConsumerRecord>)> = Vec::new();
    for r in records {
        match by_group.iter_mut().find(|(g, _)| g == r.group_id()) {
            Some((_, rs)) => rs.push(r),
            None => by_group.push((r.group_id().to_string(), vec![r])),
        }
    }
    for (group_id, records) in by_group {
        persist(shard, &group_id, records);
    }
    apply(shard, effects);
}

/// Appends `records` of `group_id` in the background (nothing waits).
pub fn persist(shard: &Rc<Shard>, group_id: &str, records: Vec<ConsumerRecord>) {
    persist_encoded(
        shard,
        group_id,
        records.iter().map(ConsumerRecord::encode).collect(),
    );
}

/// Appends encoded `records` of `group_id` in the background (nothing
/// waits; a failure is logged).
pub fn persist_encoded(
    shard: &Rc<Shard>,
    group_id: &str,
    records: Vec<super::membership::OffsetsTopicRecord>,
) {
    if records.is_empty() {
        return;
    }
    let s = shard.clone();
    let group_id = group_id.to_string();
    crate::shard::stall::spawn_local("consumer group persist", async move {
        if let Err(e) = write_records(&s, &group_id, records, None).await {
            log::warn!("could not persist consumer group {group_id}: {e}");
        }
    })
    .detach();
}

/// One group as ConsumerGroupDescribe answers it: the group, or
/// GROUP_ID_NOT_FOUND with Kafka's message for a classic group ("Group X is
/// not a consumer group.") and for no group at all ("Group X not found.").
pub fn describe(shard: &Shard, group_id: &str) -> Result<DescribedGroup, (GroupError, String)> {
    let groups = ready(shard, group_id).map_err(|e| (e, String::new()))?;
    let core = groups.core.borrow();
    if let Some(d) = core.consumer.describe(group_id) {
        return Ok(d);
    }
    if core.groups.contains_key(group_id) || core.share.contains(group_id) {
        return Err((GroupError::GroupIdNotFound, not_a_consumer_group(group_id)));
    }
    Err((
        GroupError::GroupIdNotFound,
        format!("Group {group_id} not found."),
    ))
}

/// The member check of an OffsetCommit or TxnOffsetCommit to a consumer
/// group (nothing for other groups): each partition not already failed
/// gets the state machine's answer for `member_id` at `member_epoch`
/// (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, FENCED_MEMBER_EPOCH) as its
/// error. A commit without a member (epoch < 0, no member id: the admin
/// client or a consumer that assigns itself) is allowed while the group has
/// no members, as Kafka's `ConsumerGroup.validateOffsetCommit` allows it;
/// with members it is UNKNOWN_MEMBER_ID.
pub fn check_commit(
    shard: &Shard,
    core: &GroupCore,
    group_id: &str,
    member_id: &str,
    member_epoch: i32,
    partitions: &mut [super::CommitPartition],
) {
    if !core.consumer.contains(group_id) {
        return;
    }
    if member_epoch < 0 {
        if core.consumer.has_members(group_id) || !member_id.is_empty() {
            for p in partitions.iter_mut().filter(|p| p.error.is_none()) {
                p.error = Some(GroupError::unknown_member(member_id));
            }
        }
        return;
    }
    let image = shard.metadata();
    for p in partitions.iter_mut().filter(|p| p.error.is_none()) {
        let topic_id = image.topic(&p.topic).map(|t| t.id);
        if let Err(e) =
            core.consumer
                .check_commit(group_id, member_id, member_epoch, topic_id, p.partition)
        {
            p.error = Some(e);
        }
    }
}

/// The member check of an OffsetFetch v9+ to a consumer group (nothing for
/// other groups), as Kafka's `ConsumerGroup.validateOffsetFetch`: without a
/// member (epoch < 0, no member id: the admin client) anything may be read;
/// otherwise the member must exist (UNKNOWN_MEMBER_ID) and send its current
/// epoch (STALE_MEMBER_EPOCH for any other).
pub fn check_fetch(
    core: &GroupCore,
    group_id: &str,
    member_id: &str,
    member_epoch: i32,
) -> Result<(), GroupError> {
    if !core.consumer.contains(group_id) || (member_epoch < 0 && member_id.is_empty()) {
        return Ok(());
    }
    match core
        .consumer
        .check_commit(group_id, member_id, member_epoch, None, -1)
    {
        Ok(()) => Ok(()),
        Err(GroupError::FencedMemberEpoch {
            member_id,
            epoch,
            expected,
        }) => Err(GroupError::StaleMemberEpoch {
            member_id,
            epoch,
            expected,
        }),
        Err(e) => Err(e),
    }
}

/// The consumer group settings of `group_id`: the broker's, with the
/// group's own `consumer.session.timeout.ms`,
/// `consumer.heartbeat.interval.ms` and `consumer.assignment.interval.ms`
/// (KIP-848 group configs, from the metadata image) over them.
pub fn consumer_config_of(shard: &Shard, group_id: &str) -> ConsumerGroupConfig {
    let image = shard.metadata();
    let e = super::configs::effective(&shard.config.group, image.group_configs.get(group_id));
    ConsumerGroupConfig {
        session_timeout_ms: e.session_timeout_ms,
        heartbeat_interval_ms: e.heartbeat_interval_ms,
        assignment_interval_ms: i64::from(e.assignment_interval_ms),
        ..consumer_config(&shard.config.group)
    }
}
