//! Classic and consumer groups in one namespace on the coordinator shard
//! (KIP-848's online migration, `group.consumer.migration.policy`): the
//! classic protocol's JoinGroup, SyncGroup, Heartbeat and LeaveGroup to a
//! consumer group are answered by the consumer group state machine
//! ([`super::consumer::ConsumerGroups`]); a consumer-protocol member
//! joining a live classic group converts it (upgrade), and a consumer
//! group left with classic members only converts back (downgrade) and
//! rebalances. Records are appended as each conversion writes them: the old
//! group's tombstones, then the new group's records.

use std::rc::Rc;

use super::consumer::classic::CONSUMER_PROTOCOL_TYPE;
use super::consumer::records::ConsumerRecord;
use super::consumer::TopicsView;
use super::consumer_coordinator::{not_a_consumer_group, ImageTopics};
use super::coordinator::{apply, ready, write_records};
use super::error::GroupError;
use super::membership::{GroupCore, LeaveOutcome, OffsetsTopicRecord};
use super::state::GroupState;
use super::{JoinArgs, JoinResult, LeavingMember, SyncArgs, SyncResult};
use crate::shard::{now_ms, Shard};

/// Makes way for a consumer-protocol member of `group_id`: an empty
/// classic group is dropped (its committed offsets stay); a live one is
/// converted into a consumer group when `group.consumer.migration.policy`
/// allows upgrades, it uses the `consumer` protocol type and it has at most
/// `group.consumer.max.size` members. Gives the records of the conversion
/// (the classic group's tombstone, then the consumer group's), nothing when
/// there was no classic group; GROUP_ID_NOT_FOUND with a message naming
/// the reason otherwise.
pub(super) fn upgrade(
    shard: &Shard,
    core: &mut GroupCore,
    group_id: &str,
    topics: &dyn TopicsView,
    effects: &mut Vec<super::membership::Effect>,
) -> Result<Vec<OffsetsTopicRecord>, (GroupError, Option<String>)> {
    let Some(g) = core.groups.get(group_id) else {
        return Ok(Vec::new());
    };
    if g.members.is_empty() && matches!(g.state, GroupState::Empty | GroupState::Dead) {
        core.groups.remove(group_id);
        return Ok(Vec::new());
    }
    let refuse = |why: &str| {
        Err((
            GroupError::GroupIdNotFound,
            Some(format!(
                "Cannot upgrade classic group {group_id} to consumer group because {why}."
            )),
        ))
    };
    let cfg = &shard.config.group;
    if !cfg.consumer_migration_policy.upgrades() {
        return refuse("the online upgrade is disabled (group.consumer.migration.policy)");
    }
    if g.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
        return Err((
            GroupError::GroupIdNotFound,
            Some(not_a_consumer_group(group_id)),
        ));
    }
    if g.members.len() > cfg.consumer_max_size {
        return refuse("its size exceeds group.consumer.max.size");
    }
    let Some(snapshot) = core.classic_snapshot(group_id) else {
        return Ok(Vec::new());
    };
    let records = core
        .consumer
        .upgrade(
            &super::consumer_coordinator::consumer_config_of(shard, group_id),
            &snapshot,
            topics,
            now_ms(),
            effects,
        )
        .map_err(|msg| (GroupError::GroupIdNotFound, Some(msg)))?;
    log::info!(
        "group {group_id}: classic group of {} members converted to a consumer group at epoch {}",
        snapshot.members.len(),
        snapshot.generation
    );
    let mut out = vec![core.remove_upgraded(group_id)];
    out.extend(records.iter().map(ConsumerRecord::encode));
    effects.extend(core.take_effects());
    Ok(out)
}

/// Whether `group_id` is a consumer group with a consumer-protocol member
/// (what a downgrade needs before a member leaves or is fenced).
pub(super) fn has_consumer_member(core: &GroupCore, group_id: &str) -> bool {
    core.consumer.has_members(group_id) && !core.consumer.all_classic(group_id)
}

/// After consumer-protocol members left or were fenced (`had_consumer`
/// was true before): when `group.consumer.migration.policy` allows
/// downgrades and every member left speaks the classic protocol (at most
/// `group.max.size` of them), the consumer group becomes a classic group
/// that rebalances. Gives the records (the consumer group's tombstones,
/// then the classic group's record); nothing otherwise.
pub(super) fn maybe_downgrade(
    shard: &Shard,
    core: &mut GroupCore,
    group_id: &str,
    had_consumer: bool,
    topics: &dyn TopicsView,
    effects: &mut Vec<super::membership::Effect>,
) -> Vec<OffsetsTopicRecord> {
    let cfg = &shard.config.group;
    if !had_consumer || !cfg.consumer_migration_policy.downgrades() {
        return Vec::new();
    }
    let Some((tombstones, snapshot)) = core.consumer.downgrade(group_id, cfg.max_size, topics)
    else {
        return Vec::new();
    };
    log::info!(
        "group {group_id}: consumer group of {} classic members converted to a classic group at generation {}",
        snapshot.members.len(),
        snapshot.generation
    );
    let mut out: Vec<OffsetsTopicRecord> = tombstones.iter().map(ConsumerRecord::encode).collect();
    out.push(core.adopt_downgraded(cfg, snapshot, now_ms()));
    effects.extend(core.take_effects());
    out
}

/// A classic JoinGroup to the consumer group `args.group_id` (which has
/// members): answered once its records are appended, with the member
/// epoch as generation, no leader (the server assigns) and the member's
/// first protocol. Errors as [`super::consumer::ConsumerGroups::classic_join`]'s,
/// or the append's.
pub(super) async fn classic_join(shard: Rc<Shard>, args: JoinArgs) -> JoinResult {
    let groups = match ready(&shard, &args.group_id) {
        Ok(g) => g,
        Err(e) => return JoinResult::error(e, &args.member_id),
    };
    let topics = ImageTopics(shard.metadata());
    let cfg = super::consumer_coordinator::consumer_config_of(&shard, &args.group_id);
    let mut effects = Vec::new();
    let (result, records) = {
        let mut guard = groups.core.borrow_mut();
        let core = &mut *guard;
        core.consumer.classic_join(
            &cfg,
            &args,
            &topics,
            &mut core.member_ids,
            now_ms(),
            &mut effects,
        )
    };
    apply(&shard, effects);
    let records = records.iter().map(ConsumerRecord::encode).collect();
    if let Err(e) = write_records(&shard, &args.group_id, records, None).await {
        return JoinResult::error(e, &args.member_id);
    }
    match result {
        Ok(j) => JoinResult {
            error: None,
            generation_id: j.generation_id,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name: Some(j.protocol_name),
            leader: String::new(),
            member_id: j.member_id,
            members: Vec::new(),
            skip_assignment: false,
        },
        Err(GroupError::MemberIdRequired { member_id }) => JoinResult::error(
            GroupError::MemberIdRequired {
                member_id: member_id.clone(),
            },
            &member_id,
        ),
        Err(e) => JoinResult::error(e, &args.member_id),
    }
}

/// A classic SyncGroup to a consumer group: the member's assignment as a
/// ConsumerProtocolAssignment, the request's protocol type and name echoed
/// (see [`super::consumer::ConsumerGroups::classic_sync`] for the errors).
pub(super) fn classic_sync(shard: &Rc<Shard>, core: &mut GroupCore, args: &SyncArgs) -> SyncResult {
    let topics = ImageTopics(shard.metadata());
    let mut effects = Vec::new();
    let result = core.consumer.classic_sync(
        &args.group_id,
        &args.member_id,
        args.group_instance_id.as_deref(),
        args.generation_id,
        args.protocol_type.as_deref(),
        args.protocol_name.as_deref(),
        &topics,
        now_ms(),
        &mut effects,
    );
    apply(shard, effects);
    match result {
        Ok((name, assignment)) => SyncResult {
            error: None,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name: Some(name),
            assignment,
        },
        Err(e) => SyncResult::error(e),
    }
}

/// A classic Heartbeat to a consumer group (see
/// [`super::consumer::ConsumerGroups::classic_heartbeat`]).
pub(super) fn classic_heartbeat(
    shard: &Rc<Shard>,
    core: &mut GroupCore,
    group_id: &str,
    generation: i32,
    member_id: &str,
    instance: &Option<String>,
) -> Result<(), GroupError> {
    let mut effects = Vec::new();
    let result = core.consumer.classic_heartbeat(
        group_id,
        member_id,
        instance.as_deref(),
        generation,
        now_ms(),
        &mut effects,
    );
    apply(shard, effects);
    result
}

/// A classic LeaveGroup to a consumer group: each member's outcome; the
/// records (removals, the new target) are appended in the background.
pub(super) fn classic_leave(
    shard: &Rc<Shard>,
    core: &mut GroupCore,
    group_id: &str,
    members: Vec<LeavingMember>,
) -> LeaveOutcome {
    let topics = ImageTopics(shard.metadata());
    let leaving: Vec<(String, Option<String>)> = members
        .iter()
        .map(|m| (m.member_id.clone(), m.group_instance_id.clone()))
        .collect();
    let (outcomes, records) = core
        .consumer
        .classic_leave(group_id, &leaving, &topics, now_ms());
    super::consumer_coordinator::persist(shard, group_id, records);
    LeaveOutcome {
        error: None,
        members: members.into_iter().zip(outcomes).collect(),
    }
}

/// A classic JoinGroup found the consumer group `group_id` empty: it is
/// removed (its tombstones appended in the background) so the classic group
/// takes its place, as Kafka 4.4 replaces an empty consumer group.
pub(super) fn replace_empty(shard: &Rc<Shard>, core: &mut GroupCore, group_id: &str) {
    let records = core.consumer.remove_empty(group_id);
    super::consumer_coordinator::persist(shard, group_id, records);
}
