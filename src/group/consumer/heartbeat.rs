//! ConsumerGroupHeartbeat (Kafka 4.4's `consumerGroupHeartbeat`): the
//! request's validation, join (epoch 0, static replacement), leave (-1,
//! static -2), epoch checks, subscription updates that bump the group
//! epoch, and the member's reconciliation towards the target.

use std::collections::HashMap;

use regex::Regex;

use super::group::{assigned_plain, current_record, Group, LEAVE_STATIC_EPOCH};
use super::reconcile::Current;
use super::records::{ConsumerRecord, MemberMetadata};
use super::{Assignment, ConsumerGroupConfig, HeartbeatAnswer, HeartbeatArgs, TopicsView};
use crate::group::error::GroupError;
use crate::group::membership::Effect;
use crate::group::state::MemberIdSource;

/// An error with the message Kafka puts in the answer.
pub(super) type Failure = (GroupError, Option<String>);

fn fail(e: GroupError) -> Failure {
    let msg = e.to_string();
    (e, Some(msg))
}

fn invalid(msg: &str) -> Failure {
    fail(GroupError::InvalidRequest(msg.to_string()))
}

/// Kafka's `throwIfConsumerGroupHeartbeatRequestIsInvalid`, and the
/// assignor and regex checks.
fn validate(cfg: &ConsumerGroupConfig, args: &HeartbeatArgs) -> Result<(), Failure> {
    if args.group_id.is_empty() {
        return Err(invalid("GroupId can't be empty."));
    }
    if args.version >= 1 && args.member_id.is_empty() {
        return Err(invalid("MemberId can't be empty."));
    }
    if args.instance_id.as_deref() == Some("") {
        return Err(invalid("InstanceId can't be empty."));
    }
    if args.rack_id.as_deref() == Some("") {
        return Err(invalid("RackId can't be empty."));
    }
    match args.member_epoch {
        0 => {
            if args.rebalance_timeout_ms == -1 {
                return Err(invalid(
                    "RebalanceTimeoutMs must be provided in first request.",
                ));
            }
            if !args
                .owned
                .as_ref()
                .is_some_and(|o| o.iter().all(|(_, ps)| ps.is_empty()))
            {
                return Err(invalid("TopicPartitions must be empty when (re-)joining."));
            }
            if args.subscribed_topic_names.is_none() && args.subscribed_topic_regex.is_none() {
                return Err(invalid(
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
                ));
            }
        }
        LEAVE_STATIC_EPOCH => {
            if args.instance_id.is_none() {
                return Err(invalid("InstanceId can't be null."));
            }
        }
        e if e < LEAVE_STATIC_EPOCH => return Err(invalid("MemberEpoch is invalid.")),
        _ => {
            if args.member_id.is_empty() {
                return Err(invalid("MemberId can't be empty."));
            }
        }
    }
    if let Some(name) = &args.server_assignor {
        if !cfg.assignors.iter().any(|a| a == name) {
            return Err(fail(GroupError::UnsupportedAssignor {
                assignor: name.clone(),
                supported: cfg.assignors.join(", "),
            }));
        }
    }
    if let Some(re) = args
        .subscribed_topic_regex
        .as_deref()
        .filter(|r| !r.is_empty())
    {
        if let Err(e) = Regex::new(re) {
            return Err(fail(GroupError::InvalidRegularExpression {
                regex: re.to_string(),
                reason: e.to_string(),
            }));
        }
    }
    Ok(())
}

/// The request's owned partitions as an assignment (empty topics dropped).
fn owned_of(args: &HeartbeatArgs) -> Option<Assignment> {
    args.owned.as_ref().map(|o| {
        let mut a = Assignment::new();
        for (t, ps) in o {
            if !ps.is_empty() {
                a.entry(*t).or_default().extend(ps.iter().copied());
            }
        }
        a
    })
}

fn is_subset(owned: Option<&Assignment>, assigned: &Assignment) -> bool {
    owned.is_some_and(|o| {
        o.iter()
            .all(|(t, ps)| assigned.get(t).is_some_and(|have| ps.is_subset(have)))
    })
}

/// The heartbeat; `records` receives what to append (nothing on error).
#[allow(clippy::too_many_arguments)]
pub(super) fn heartbeat(
    groups: &mut HashMap<String, Group>,
    cfg: &ConsumerGroupConfig,
    args: HeartbeatArgs,
    topics: &dyn TopicsView,
    ids: &mut MemberIdSource,
    now: i64,
    out: &mut Vec<Effect>,
    records: &mut Vec<ConsumerRecord>,
) -> Result<HeartbeatAnswer, Failure> {
    validate(cfg, &args)?;
    if args.member_epoch < 0 {
        let group = groups
            .get_mut(&args.group_id)
            .ok_or_else(|| fail(GroupError::GroupIdNotFound))?;
        group.configure(cfg);
        return leave(group, cfg, &args, topics, now, out, records);
    }
    let created = !groups.contains_key(&args.group_id);
    if created && args.member_epoch != 0 {
        return Err(fail(GroupError::unknown_member(&args.member_id)));
    }
    let group = groups
        .entry(args.group_id.clone())
        .or_insert_with(|| Group::created(cfg.assignors.clone()));
    group.configure(cfg);
    let result = member_heartbeat(group, cfg, &args, topics, ids, now, out, records);
    if result.is_err() && created {
        groups.remove(&args.group_id);
    }
    result
}

/// -1 (leave) or -2 (static member's temporary leave).
fn leave(
    group: &mut Group,
    cfg: &ConsumerGroupConfig,
    args: &HeartbeatArgs,
    topics: &dyn TopicsView,
    now: i64,
    out: &mut Vec<Effect>,
    records: &mut Vec<ConsumerRecord>,
) -> Result<HeartbeatAnswer, Failure> {
    let member_id = match &args.instance_id {
        Some(inst) => {
            let holder = group
                .instances
                .get(inst)
                .ok_or_else(|| fail(GroupError::unknown_member(&args.member_id)))?;
            if *holder != args.member_id {
                return Err(fail(GroupError::FencedInstanceId {
                    group_instance_id: Some(inst.clone()),
                }));
            }
            holder.clone()
        }
        None => {
            if !group.members.contains_key(&args.member_id) {
                return Err(fail(GroupError::unknown_member(&args.member_id)));
            }
            args.member_id.clone()
        }
    };
    let gid = &args.group_id;
    if args.member_epoch == LEAVE_STATIC_EPOCH {
        let Some(m) = group.members.get_mut(&member_id) else {
            return Err(fail(GroupError::unknown_member(&member_id)));
        };
        let mut next = m.current.clone();
        next.previous_epoch = next.epoch;
        next.epoch = LEAVE_STATIC_EPOCH;
        m.rebalance_deadline = None;
        let at_ms = now + i64::from(cfg.session_timeout_ms);
        m.session_deadline = Some(at_ms);
        records.push(current_record(gid, &member_id, &next));
        group.set_current(&member_id, next);
        out.push(Effect::Timer {
            group_id: gid.clone(),
            at_ms,
        });
    } else {
        group.remove_member(gid, &member_id, records);
        group.bump(gid, topics, now, records);
    }
    Ok(HeartbeatAnswer {
        member_id,
        member_epoch: args.member_epoch,
        heartbeat_interval_ms: cfg.heartbeat_interval_ms,
        assignment: None,
    })
}

/// Join (epoch 0) or heartbeat of a member (epoch > 0).
#[allow(clippy::too_many_arguments)]
fn member_heartbeat(
    group: &mut Group,
    cfg: &ConsumerGroupConfig,
    args: &HeartbeatArgs,
    topics: &dyn TopicsView,
    ids: &mut MemberIdSource,
    now: i64,
    out: &mut Vec<Effect>,
    records: &mut Vec<ConsumerRecord>,
) -> Result<HeartbeatAnswer, Failure> {
    let gid = &args.group_id;
    let owned = owned_of(args);
    let joining = args.member_epoch == 0;
    let member_id = if args.member_id.is_empty() {
        ids.member_id(&args.client_id)
    } else {
        args.member_id.clone()
    };
    // Who the member is, every check before any change.
    let mut is_new = false;
    let mut replaces: Option<String> = None;
    if joining {
        let static_holder = args
            .instance_id
            .as_ref()
            .and_then(|i| group.instances.get(i));
        match static_holder {
            Some(old) => {
                let old_epoch = group
                    .members
                    .get(old)
                    .map_or(LEAVE_STATIC_EPOCH, |m| m.current.epoch);
                if old_epoch != LEAVE_STATIC_EPOCH {
                    return Err(fail(GroupError::UnreleasedInstanceId {
                        instance_id: args.instance_id.clone().unwrap_or_default(),
                    }));
                }
                if *old != member_id {
                    replaces = Some(old.clone());
                }
            }
            None => {
                if !group.members.contains_key(&member_id) {
                    if group.members.len() >= cfg.max_size {
                        return Err(fail(GroupError::GroupMaxSizeReached {
                            max_size: cfg.max_size,
                        }));
                    }
                    is_new = true;
                }
            }
        }
    } else {
        let m = group
            .members
            .get(&member_id)
            .ok_or_else(|| fail(GroupError::unknown_member(&member_id)))?;
        if let Some(inst) = &args.instance_id {
            match group.instances.get(inst) {
                None => return Err(fail(GroupError::unknown_member(&member_id))),
                Some(holder) if *holder != member_id => {
                    return Err(fail(GroupError::FencedInstanceId {
                        group_instance_id: Some(inst.clone()),
                    }))
                }
                Some(_) => {}
            }
        }
        let epoch = m.current.epoch;
        let lost_answer = args.member_epoch == m.current.previous_epoch
            && is_subset(owned.as_ref(), &assigned_plain(&m.current));
        if args.member_epoch > epoch || (args.member_epoch < epoch && !lost_answer) {
            return Err(fail(GroupError::FencedMemberEpoch {
                member_id: member_id.clone(),
                epoch: args.member_epoch,
                expected: epoch,
            }));
        }
    }

    // The member record as it stands before this heartbeat.
    let before = group.admit(gid, &member_id, replaces.as_deref(), is_new, records);
    if joining && replaces.is_none() && !is_new {
        // A known member rejoining has dropped its partitions.
        let mut reset = before.current.clone();
        if reset.epoch != LEAVE_STATIC_EPOCH {
            reset = Current::default();
        }
        group.set_current(&member_id, reset);
    }
    let meta = updated_meta(&before.meta, args);
    group.update_member(
        gid,
        &member_id,
        &before.meta,
        meta,
        is_new,
        replaces.is_some(),
        topics,
        now,
        records,
    );

    // Reconcile towards the target.
    let force = replaces.is_some() || (joining && !is_new);
    let Some((_, next)) = group.reconcile_member(
        gid,
        &member_id,
        owned.as_ref(),
        topics,
        cfg.session_timeout_ms,
        force,
        now,
        out,
        records,
    ) else {
        return Err(fail(GroupError::unknown_member(&member_id)));
    };
    let assigned_before = assigned_plain(&before.current);
    let assigned_now = assigned_plain(&next);
    let member_epoch = next.epoch;

    let full = args.rebalance_timeout_ms != -1
        && (args.subscribed_topic_names.is_some() || args.subscribed_topic_regex.is_some())
        && args.owned.is_some();
    let send = joining
        || full
        || assigned_now != assigned_before
        || owned.as_ref().is_some_and(|o| *o != assigned_now);
    Ok(HeartbeatAnswer {
        member_id,
        member_epoch,
        heartbeat_interval_ms: cfg.heartbeat_interval_ms,
        assignment: send.then_some(assigned_now),
    })
}

/// The member's record 5 after this heartbeat's fields (None: unchanged).
fn updated_meta(old: &MemberMetadata, args: &HeartbeatArgs) -> MemberMetadata {
    let mut meta = old.clone();
    if args.instance_id.is_some() {
        meta.instance_id = args.instance_id.clone();
    }
    if args.rack_id.is_some() {
        meta.rack_id = args.rack_id.clone();
    }
    meta.client_id = args.client_id.clone();
    meta.client_host = args.client_host.clone();
    if args.rebalance_timeout_ms != -1 {
        meta.rebalance_timeout_ms = args.rebalance_timeout_ms;
    }
    if let Some(names) = &args.subscribed_topic_names {
        let mut names = names.clone();
        names.sort();
        names.dedup();
        meta.subscribed_topic_names = names;
    }
    if let Some(re) = &args.subscribed_topic_regex {
        meta.subscribed_topic_regex = if re.is_empty() {
            None
        } else {
            Some(re.clone())
        };
    }
    if args.server_assignor.is_some() {
        meta.server_assignor = args.server_assignor.clone();
    }
    meta
}
