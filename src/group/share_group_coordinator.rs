//! Share groups (KIP-932) on the coordinator shard: the glue between
//! ShareGroupHeartbeat / ShareGroupDescribe / DeleteGroups and the pure
//! state machine ([`super::share::membership::ShareGroups`], held in the
//! shard's [`GroupCore`] beside the classic and consumer groups: one group
//! namespace). A heartbeat's records (keys 10–14 of `__consumer_offsets`)
//! are appended before it is answered; a session timer fences a silent
//! member and appends its removal in the background.

use std::rc::Rc;

use super::consumer_coordinator::ImageTopics;
use super::coordinator::{apply, ready, write_records};
use super::error::GroupError;
use super::membership::{Effect, GroupCore, OffsetsTopicRecord};
use super::share::membership::{
    DescribedShareGroup, ShareGroupConfig, ShareHeartbeatAnswer, ShareHeartbeatArgs,
};
use super::share::records::ShareGroupRecord;
use crate::shard::owner::share_persist;
use crate::shard::remote::ShareStateCall;
use crate::shard::share_store::ShareCoordinatorError;
use crate::shard::{now_ms, Shard};
use crate::share::config::{AutoOffsetReset, DeadLetterSettings, GroupShareSettings};
use crate::share::partition::ShareConfig;

/// Kafka's message for a group of another type (GROUP_ID_NOT_FOUND).
pub fn not_a_share_group(group_id: &str) -> String {
    format!("Group {group_id} is not a share group.")
}

/// The share group settings of `group_id`: the broker's `group.share.*`
/// with the group's own `share.session.timeout.ms` and
/// `share.heartbeat.interval.ms` (group configs) over them.
pub fn share_config_of(shard: &Shard, group_id: &str) -> ShareGroupConfig {
    let e = share_group_settings(shard, group_id);
    ShareGroupConfig {
        heartbeat_interval_ms: e.heartbeat_interval_ms,
        session_timeout_ms: e.session_timeout_ms,
        max_size: shard.config.group.share_max_size,
    }
}

/// The share group settings of `group_id` in force on any shard (the
/// group configs come from the metadata image): `share.auto.offset.reset`,
/// `share.isolation.level`, `share.record.lock.duration.ms`,
/// `share.delivery.count.limit` (and the session settings), each the
/// group's override or the broker's `group.share.*` value. What the share
/// partitions read for a group.
pub fn share_group_settings(shard: &Shard, group_id: &str) -> super::configs::EffectiveShare {
    super::configs::effective_share(
        &shard.config.group,
        shard.metadata().group_configs.get(group_id),
    )
}

/// The share-partition settings of `group_id` (KIP-932), what the ShareFetch
/// handler sends to the share-partitions: the group's
/// `share.record.lock.duration.ms`, `share.delivery.count.limit`,
/// `share.auto.offset.reset` (`earliest`, `by_duration:<ISO-8601>`, else
/// `latest`) and `share.isolation.level` in force, and the broker's
/// `group.share.partition.max.record.locks` (at least 1).
pub fn share_partition_settings(shard: &Shard, group_id: &str) -> GroupShareSettings {
    let e = share_group_settings(shard, group_id);
    let max_record_locks = shard.config.group.share_partition_max_record_locks;
    let auto_offset_reset = if e.auto_offset_reset == "earliest" {
        AutoOffsetReset::Earliest
    } else {
        match e
            .auto_offset_reset
            .strip_prefix("by_duration:")
            .and_then(super::configs::iso_duration_ms)
        {
            Some(ms) => AutoOffsetReset::ByDuration(ms),
            None => AutoOffsetReset::Latest,
        }
    };
    GroupShareSettings {
        window: ShareConfig {
            lock_duration_ms: i64::from(e.record_lock_duration_ms),
            delivery_count_limit: i16::try_from(e.delivery_count_limit).unwrap_or(i16::MAX),
            max_record_locks: usize::try_from(max_record_locks.max(1)).unwrap_or(1),
            dead_letter: dead_letter_on(shard, &e),
        },
        auto_offset_reset,
        read_committed: e.isolation_level == "read_committed",
        dead_letter: DeadLetterSettings {
            topic: e.dlq_topic.clone(),
            copy_record: e.dlq_copy_record,
        },
    }
}

/// Whether `group_id`'s given-up records go to a dead-letter queue
/// (KIP-1191): its `errors.deadletterqueue.topic.name` is set and
/// `share.version` ≥ 2 is finalized, as Kafka 4.4 decides it.
fn dead_letter_on(shard: &Shard, e: &super::configs::EffectiveShare) -> bool {
    let level = shard
        .metadata()
        .finalized_features
        .get(crate::cluster::features::SHARE_VERSION)
        .copied()
        .unwrap_or(0);
    level >= crate::cluster::features::SHARE_VERSION_DLQ && !e.dlq_topic.is_empty()
}

/// Kafka's message for a refused heartbeat of `group_id`, for the errors
/// whose text clients show (the code itself is mapped in `src/error.rs`);
/// None for the others, answered with the error's own text.
fn message(e: &GroupError, group_id: &str, member_epoch: i32) -> Option<String> {
    if let GroupError::GroupIdNotFound = e {
        // Kafka's two texts: a leave looks the group up by id, any other
        // heartbeat as a share group.
        return Some(if member_epoch == -1 {
            format!("Group {group_id} not found.")
        } else {
            format!("Share group {group_id} not found.")
        });
    }
    if let GroupError::FencedMemberEpoch {
        epoch, expected, ..
    } = e
    {
        return Some(format!(
            "The share group member has a {} member epoch ({epoch}) than the one known by the group coordinator ({expected}). The member must abandon all its partitions and rejoin.",
            if epoch > expected { "greater" } else { "smaller" }
        ));
    }
    if let GroupError::UnknownMemberId { member_id } = e {
        return Some(format!(
            "Member {member_id} is not a member of group {group_id}."
        ));
    }
    if let GroupError::GroupMaxSizeReached { max_size } = e {
        return Some(format!(
            "The share group has reached its maximum capacity of {max_size} members."
        ));
    }
    if let GroupError::InvalidRequest(m) = e {
        return Some(m.clone());
    }
    None
}

/// Handles a ShareGroupHeartbeat on the group's coordinator shard: the
/// state machine's answer once the records it gave are appended. Errors:
/// the state machine's (with Kafka's messages), GROUP_ID_NOT_FOUND "Group
/// G is not a share group." for a classic or consumer group of that id,
/// COORDINATOR_LOAD_IN_PROGRESS while the partition loads, or the
/// append's error.
pub async fn heartbeat(
    shard: Rc<Shard>,
    args: ShareHeartbeatArgs,
) -> Result<ShareHeartbeatAnswer, (GroupError, Option<String>)> {
    let groups = ready(&shard, &args.group_id).map_err(|e| (e, None))?;
    let group_id = args.group_id.clone();
    let topics = ImageTopics(shard.metadata());
    let cfg = share_config_of(&shard, &group_id);
    let now = now_ms();
    let (result, records) = {
        let mut core = groups.core.borrow_mut();
        if core.groups.contains_key(&group_id) || core.consumer.contains(&group_id) {
            return Err((
                GroupError::GroupIdNotFound,
                Some(not_a_share_group(&group_id)),
            ));
        }
        core.share.heartbeat(&cfg, &args, &topics, now)
    };
    let result = result.map_err(|e| {
        let m = message(&e, &group_id, args.member_epoch);
        (e, m)
    });
    if result.as_ref().is_ok_and(|a| a.member_epoch >= 0) {
        apply(
            &shard,
            vec![Effect::Timer {
                group_id: group_id.clone(),
                at_ms: now + i64::from(cfg.session_timeout_ms),
            }],
        );
    }
    let records = records.iter().map(ShareGroupRecord::encode).collect();
    write_records(&shard, &group_id, records, None)
        .await
        .map_err(|e| (e, None))?;
    result
}

/// A share group's session timer came: members silent since their session
/// started are fenced, their removal appended in the background. Nothing
/// is re-armed: every heartbeat arms a timer at its member's new deadline
/// (and a load one per group), so each member's last timer finds it.
pub fn on_deadline(shard: &Rc<Shard>, core: &mut GroupCore, group_id: &str) -> Vec<Effect> {
    let topics = ImageTopics(shard.metadata());
    let (fenced, records) = core.share.on_deadline(group_id, &topics, now_ms());
    if !fenced.is_empty() {
        log::info!("share group {group_id}: session timeout fenced {fenced:?}");
    }
    persist(
        shard,
        group_id,
        records.iter().map(ShareGroupRecord::encode).collect(),
    );
    Vec::new()
}

/// The applied metadata image changed the topics: the share groups of this
/// shard subscribed to a created, deleted or grown topic bump their epoch
/// and get a new target; each group's records are appended in the
/// background. Nothing when the shard holds no share group.
pub fn topics_changed(shard: &Rc<Shard>) {
    let groups = super::GroupCoordinator::here();
    let records = {
        let Ok(mut core) = groups.core.try_borrow_mut() else {
            log::warn!("share groups busy: topic change taken at their next heartbeat");
            return;
        };
        if core.share.is_empty() {
            return;
        }
        core.share.topics_changed(&ImageTopics(shard.metadata()))
    };
    let mut by_group: Vec<(String, Vec<OffsetsTopicRecord>)> = Vec::new();
    for r in records {
        let encoded = r.encode();
        match by_group.iter_mut().find(|(g, _)| g == r.group_id()) {
            Some((_, rs)) => rs.push(encoded),
            None => by_group.push((r.group_id().to_string(), vec![encoded])),
        }
    }
    for (group_id, records) in by_group {
        persist(shard, &group_id, records);
    }
}

/// After a load: the members found get a session from now (each group with
/// its own session timeout); gives the timers to arm.
pub fn arm_after_load(shard: &Shard, core: &mut GroupCore) -> Vec<Effect> {
    core.share
        .arm_after_load(
            &|group_id| share_config_of(shard, group_id).session_timeout_ms,
            now_ms(),
        )
        .into_iter()
        .map(|(group_id, at_ms)| Effect::Timer { group_id, at_ms })
        .collect()
}

fn persist(shard: &Rc<Shard>, group_id: &str, records: Vec<OffsetsTopicRecord>) {
    if records.is_empty() {
        return;
    }
    let s = shard.clone();
    let group_id = group_id.to_string();
    crate::shard::stall::spawn_local("share group persist", async move {
        if let Err(e) = write_records(&s, &group_id, records, None).await {
            log::warn!("could not persist share group {group_id}: {e}");
        }
    })
    .detach();
}

/// ShareGroupDescribe of one group: the group, or GROUP_ID_NOT_FOUND with
/// Kafka's message for a classic or consumer group ("Group G is not a
/// share group.") and for no group at all ("Group G not found.").
pub fn describe(
    shard: &Shard,
    group_id: &str,
) -> Result<DescribedShareGroup, (GroupError, String)> {
    let groups = ready(shard, group_id).map_err(|e| (e, String::new()))?;
    let core = groups.core.borrow();
    if let Some(d) = core.share.describe_full(group_id) {
        return Ok(d);
    }
    if core.groups.contains_key(group_id) || core.consumer.contains(group_id) {
        return Err((GroupError::GroupIdNotFound, not_a_share_group(group_id)));
    }
    Err((
        GroupError::GroupIdNotFound,
        format!("Group {group_id} not found."),
    ))
}

/// DeleteGroups of a share group: NON_EMPTY_GROUP while it has members;
/// otherwise the state of every share-partition it has state for (record
/// 15) is deleted on the share coordinator (DeleteShareGroupState) and
/// the partitions' in-memory windows on this broker's leaders are dropped,
/// then its tombstones are appended and the group is gone, so a group
/// created again under the same id starts from `share.auto.offset.reset`
/// (Kafka 4.4 deletes the state first too). COORDINATOR_NOT_AVAILABLE when
/// a state could not be deleted (the group stays). Ok(false) when
/// `group_id` is no share group here.
pub async fn delete(shard: &Rc<Shard>, group_id: &str) -> Result<bool, GroupError> {
    let groups = ready(shard, group_id)?;
    let state = {
        let core = groups.core.borrow();
        if !core.share.contains(group_id) {
            return Ok(false);
        }
        core.share.plan_delete(group_id)?;
        core.share.state_topics(group_id).unwrap_or_default()
    };
    for (topic_id, name, partitions) in &state {
        delete_state(shard, group_id, *topic_id, name, partitions)
            .await
            .map_err(|_| GroupError::CoordinatorNotAvailable)?;
    }
    let records = {
        let core = groups.core.borrow();
        if !core.share.contains(group_id) {
            return Ok(true);
        }
        core.share.plan_delete(group_id)?
    };
    let records = records.iter().map(ShareGroupRecord::encode).collect();
    write_records(shard, group_id, records, None).await?;
    groups.core.borrow_mut().share.forget_empty(group_id);
    log::info!("share group {group_id} deleted");
    Ok(true)
}

/// Deletes the state of `group_id` on `partitions` of topic `topic_id`
/// (named `name` in record 15) on the share coordinator, then drops the
/// windows of this broker's leaders (the leaders on other brokers find the
/// state gone at their next write). Errors: the share coordinator's, or
/// COORDINATOR_NOT_AVAILABLE (Unavailable) when a leader's shard could not
/// be reached.
pub async fn delete_state(
    shard: &Rc<Shard>,
    group_id: &str,
    topic_id: uuid::Uuid,
    name: &str,
    partitions: &[i32],
) -> Result<(), ShareCoordinatorError> {
    for p in partitions {
        let key = (group_id.to_string(), topic_id, *p);
        if let Err(e) = share_persist::state_call(shard, &key, ShareStateCall::Delete).await {
            log::warn!("share group {group_id}: deleting the state of {name}-{p}: {e}");
            return Err(e);
        }
    }
    let topic = shard
        .metadata()
        .topic_by_id(&topic_id)
        .map_or_else(|| name.to_string(), |t| t.name.to_string());
    if let Err(e) =
        share_persist::forget_windows(shard, group_id, &topic, topic_id, partitions).await
    {
        log::warn!("share group {group_id}: dropping the windows of {topic}: {e}");
        return Err(ShareCoordinatorError::Unavailable(e));
    }
    Ok(())
}

/// What a group id names, for the share group offsets APIs (KIP-932).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateScope {
    /// No group of that id.
    NoGroup,
    /// A classic or consumer group.
    OtherType,
    /// A share group with its share-partitions with state: (topic id, name
    /// in record 15, partitions).
    Share(Vec<(uuid::Uuid, String, Vec<i32>)>),
}

/// The scope of DescribeShareGroupOffsets for `group_id` on its
/// coordinator shard. Errors: COORDINATOR_LOAD_IN_PROGRESS,
/// NOT_COORDINATOR.
pub fn state_scope(shard: &Shard, group_id: &str) -> Result<StateScope, GroupError> {
    let groups = ready(shard, group_id)?;
    let core = groups.core.borrow();
    if let Some(topics) = core.share.state_topics(group_id) {
        return Ok(StateScope::Share(topics));
    }
    if core.groups.contains_key(group_id) || core.consumer.contains(group_id) {
        return Ok(StateScope::OtherType);
    }
    Ok(StateScope::NoGroup)
}

/// A change of a share group's share-partitions with state.
#[derive(Debug, Clone)]
pub enum StateTopicsChange {
    /// AlterShareGroupOffsets: (topic id, name, partitions) initialized.
    Add(Vec<(uuid::Uuid, String, Vec<i32>)>),
    /// DeleteShareGroupOffsets: the topics whose state is deleted.
    Remove(Vec<uuid::Uuid>),
}

/// AlterShareGroupOffsets (`Add`, which creates a missing share group, as
/// Kafka 4.4 does) and DeleteShareGroupOffsets (`Remove`) of `group_id` on
/// its coordinator shard: checks the group and appends record 15 (and a
/// new group's records) before the state is changed. Errors with Kafka's
/// messages: NON_EMPTY_GROUP "The group is not empty.", GROUP_ID_NOT_FOUND
/// "Group G is not a share group." / "Group G not found.", or the
/// coordinator's (loading, not coordinator, the append's).
pub async fn change_state_topics(
    shard: &Rc<Shard>,
    group_id: &str,
    change: StateTopicsChange,
) -> Result<(), (GroupError, Option<String>)> {
    let groups = ready(shard, group_id).map_err(|e| (e, None))?;
    let records = {
        let mut core = groups.core.borrow_mut();
        if core.groups.contains_key(group_id) || core.consumer.contains(group_id) {
            return Err((
                GroupError::GroupIdNotFound,
                Some(not_a_share_group(group_id)),
            ));
        }
        let create = matches!(change, StateTopicsChange::Add(_));
        core.share
            .change_state_topics(group_id, create, |set| match change {
                StateTopicsChange::Add(topics) => {
                    for (id, name, parts) in topics {
                        set.add(id, &name, parts);
                    }
                }
                StateTopicsChange::Remove(ids) => {
                    for id in &ids {
                        set.remove(id);
                    }
                }
            })
            .map_err(|e| {
                let mut m = None;
                if let GroupError::NonEmptyGroup = e {
                    m = Some("The group is not empty.".to_string());
                }
                if let GroupError::GroupIdNotFound = e {
                    m = Some(format!("Group {group_id} not found."));
                }
                (e, m)
            })?
    };
    let records = records.iter().map(ShareGroupRecord::encode).collect();
    write_records(shard, group_id, records, None)
        .await
        .map_err(|e| (e, None))
}
