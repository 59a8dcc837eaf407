//! The later stages of the classic group protocol's state machine: the
//! rebalance (PreparingRebalance → CompletingRebalance, member removal, the
//! deadlines), SyncGroup, and the group's `__consumer_offsets` record.
//! Pure, as its parent [`super`].

use std::collections::HashMap;

use bytes::Bytes;

use super::*;

// ---------------------------------------------------------------- rebalance

/// PreparingRebalance: cancels pending syncs (REBALANCE_IN_PROGRESS) and sets
/// the join deadlines: not before `group.initial.rebalance.delay.ms` when the
/// group was Empty (capped by the rebalance timeout), at the latest after the
/// largest rebalance timeout of the members.
pub(crate) fn prepare_rebalance(
    grp: &mut Group,
    cfg: &GroupConfig,
    now: i64,
    out: &mut Vec<Effect>,
) {
    if grp.state == GroupState::CompletingRebalance {
        for m in grp.members.values_mut() {
            if let Some(handle) = m.awaiting_sync.take() {
                out.push(Effect::Sync {
                    handle,
                    result: SyncResult::error(GroupError::RebalanceInProgress),
                });
            }
        }
    }
    let from_empty = grp.state == GroupState::Empty;
    grp.transition(GroupState::PreparingRebalance, now);
    let rebalance_ms = i64::from(grp.max_rebalance_timeout_ms().max(0));
    let delay_ms = if from_empty {
        i64::from(cfg.initial_rebalance_delay_ms.max(0)).min(rebalance_ms)
    } else {
        0
    };
    grp.join_not_before_ms = now + delay_ms;
    grp.rebalance_deadline_ms = now + rebalance_ms.max(delay_ms);
}

/// Completes the join when every member rejoined (and the initial delay
/// passed), or unconditionally at the rebalance deadline (`force`), removing
/// members that did not rejoin. Every parked join is answered; the leader's
/// answer lists the members.
pub(super) fn try_complete_join(grp: &mut Group, force: bool, now: i64, out: &mut Vec<Effect>) {
    if grp.state != GroupState::PreparingRebalance {
        return;
    }
    if !force && (now < grp.join_not_before_ms || !grp.all_joined()) {
        return;
    }
    let gone: Vec<String> = grp
        .members
        .values()
        .filter(|m| m.awaiting_join.is_none())
        .map(|m| m.member_id.clone())
        .collect();
    for id in gone {
        log::info!(
            "member {id} of group {} did not rejoin in time; removed",
            grp.group_id
        );
        grp.remove_member(&id);
    }
    grp.generation += 1;
    if grp.members.is_empty() {
        grp.protocol_name = None;
        grp.leader = None;
        grp.transition(GroupState::Empty, now);
        out.push(Effect::Persist {
            group_id: grp.group_id.clone(),
            record: group_record(grp),
        });
        return;
    }
    grp.protocol_name = grp.select_protocol();
    if grp
        .leader
        .as_ref()
        .is_none_or(|l| !grp.members.contains_key(l))
    {
        grp.leader = grp.members.keys().next().cloned();
    }
    grp.transition(GroupState::CompletingRebalance, now);
    crate::metrics::coordinator::count(crate::metrics::coordinator::Event::ClassicRebalance);
    let protocol = grp.protocol_name.clone().unwrap_or_default();
    let leader = grp.leader.clone().unwrap_or_default();
    let all = member_list(grp);
    let (generation, ptype) = (grp.generation, grp.protocol_type.clone());
    for m in grp.members.values_mut() {
        m.last_heartbeat_ms = now;
        if let Some(handle) = m.awaiting_join.take() {
            out.push(Effect::Join {
                handle,
                result: JoinResult {
                    error: None,
                    generation_id: generation,
                    protocol_type: ptype.clone(),
                    protocol_name: Some(protocol.clone()),
                    leader: leader.clone(),
                    member_id: m.member_id.clone(),
                    members: if m.member_id == leader {
                        all.clone()
                    } else {
                        Vec::new()
                    },
                    skip_assignment: false,
                },
            });
        }
    }
}

/// Removes a member (answering its parked requests with `error`) and moves
/// the group on: a rebalance from Stable/CompletingRebalance, a join
/// completion check from PreparingRebalance.
pub(super) fn remove_member_and_rebalance(
    grp: &mut Group,
    cfg: &GroupConfig,
    member_id: &str,
    error: GroupError,
    now: i64,
    out: &mut Vec<Effect>,
) {
    if let Some(mut m) = grp.remove_member(member_id) {
        if let Some(handle) = m.awaiting_join.take() {
            out.push(Effect::Join {
                handle,
                result: JoinResult::error(error.clone(), member_id),
            });
        }
        if let Some(handle) = m.awaiting_sync.take() {
            out.push(Effect::Sync {
                handle,
                result: SyncResult::error(error),
            });
        }
    }
    match grp.state {
        GroupState::Stable | GroupState::CompletingRebalance => {
            prepare_rebalance(grp, cfg, now, out)
        }
        GroupState::PreparingRebalance => try_complete_join(grp, false, now, out),
        GroupState::Empty | GroupState::Dead => {}
    }
}

/// The earliest time the group needs its timer: a pending member id
/// lapsing, a session ending, or the join's delay/deadline.
pub(super) fn next_deadline(grp: &Group, now: i64) -> Option<i64> {
    let pending = grp.pending_members.values().copied();
    let sessions = grp
        .members
        .values()
        .filter(|m| m.awaiting_join.is_none())
        .map(Member::session_deadline_ms);
    let join = match grp.state {
        GroupState::PreparingRebalance => {
            let delay = (grp.join_not_before_ms > now).then_some(grp.join_not_before_ms);
            vec![Some(grp.rebalance_deadline_ms), delay]
        }
        GroupState::Empty
        | GroupState::CompletingRebalance
        | GroupState::Stable
        | GroupState::Dead => Vec::new(),
    };
    pending
        .chain(sessions)
        .chain(join.into_iter().flatten())
        .min()
}

/// Arms the group's timer for its next deadline unless one is due sooner.
pub(super) fn schedule(grp: &mut Group, now: i64, out: &mut Vec<Effect>) {
    if grp.state == GroupState::Dead {
        return;
    }
    let Some(at) = next_deadline(grp, now) else {
        return;
    };
    if grp.timer_at_ms.is_some_and(|t| t <= at) {
        return;
    }
    grp.timer_at_ms = Some(at);
    out.push(Effect::Timer {
        group_id: grp.group_id.clone(),
        at_ms: at,
    });
}

// ---------------------------------------------------------------- sync

/// SyncGroup's checks and answer: `Ok(Some)` answers now, `Ok(None)` parks.
pub(super) fn sync_step(
    grp: &mut Group,
    args: &SyncArgs,
    handle: RequestHandle,
    now: i64,
    out: &mut Vec<Effect>,
) -> Result<Option<SyncResult>, GroupError> {
    if grp.state == GroupState::Dead {
        return Err(GroupError::CoordinatorNotAvailable);
    }
    check_member(grp, &args.member_id, &args.group_instance_id)?;
    check_generation(grp, args.generation_id)?;
    if args
        .protocol_type
        .as_ref()
        .is_some_and(|t| grp.protocol_type.as_ref() != Some(t))
        || args
            .protocol_name
            .as_ref()
            .is_some_and(|n| grp.protocol_name.as_ref() != Some(n))
    {
        return Err(GroupError::InconsistentGroupProtocol);
    }
    match grp.state {
        GroupState::Empty => return Err(GroupError::unknown_member(&args.member_id)),
        GroupState::Dead => return Err(GroupError::CoordinatorNotAvailable),
        GroupState::PreparingRebalance => return Err(GroupError::RebalanceInProgress),
        GroupState::Stable => {
            let assignment = grp
                .members
                .get(&args.member_id)
                .map(|m| m.assignment.clone())
                .unwrap_or_default();
            return Ok(Some(SyncResult {
                error: None,
                protocol_type: grp.protocol_type.clone(),
                protocol_name: grp.protocol_name.clone(),
                assignment,
            }));
        }
        GroupState::CompletingRebalance => {}
    }
    if let Some(m) = grp.members.get_mut(&args.member_id) {
        m.last_heartbeat_ms = now;
        if let Some(old) = m.awaiting_sync.replace(handle) {
            out.push(Effect::Sync {
                handle: old,
                result: SyncResult::error(GroupError::unknown_member(&args.member_id)),
            });
        }
    }
    if grp.leader.as_deref() == Some(args.member_id.as_str()) {
        let assignments: HashMap<&str, &Bytes> = args
            .assignments
            .iter()
            .map(|(m, a)| (m.as_str(), a))
            .collect();
        for m in grp.members.values_mut() {
            m.assignment = assignments
                .get(m.member_id.as_str())
                .map(|a| (*a).clone())
                .unwrap_or_default();
        }
        out.push(Effect::StoreAssignment {
            group_id: grp.group_id.clone(),
            generation: grp.generation,
            record: group_record(grp),
        });
    }
    Ok(None)
}

// ---------------------------------------------------------------- records

/// The group's metadata record (Kafka's GroupMetadataValue).
pub fn group_record(g: &Group) -> OffsetsTopicRecord {
    let protocol = g.protocol_name.clone();
    let value = GroupValue {
        protocol_type: g.protocol_type.clone().unwrap_or_default(),
        generation: g.generation,
        protocol: protocol.clone(),
        leader: g.leader.clone(),
        current_state_timestamp: g.state_timestamp_ms,
        members: g
            .members
            .values()
            .map(|m| StoredMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: m.session_timeout_ms,
                subscription: protocol
                    .as_deref()
                    .map(|p| m.metadata_for(p))
                    .unwrap_or_default(),
                assignment: m.assignment.clone(),
            })
            .collect(),
    };
    (
        records::group_key(&g.group_id),
        Some(records::group_value(&value)),
    )
}
