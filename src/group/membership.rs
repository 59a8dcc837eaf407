//! The classic group protocol as a pure state machine: JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup, the session and rebalance deadlines, and the
//! admin views (DescribeGroups, ListGroups, DeleteGroups). Every call takes
//! the request and `now` (ms since the epoch) and gives its answer; what the
//! shard must do besides (answer a parked request, append a record to
//! `__consumer_offsets`, arm a timer) is queued as [`Effect`]s that the glue
//! (`group::coordinator`) takes with [`GroupCore::take_effects`] and applies.
//! No I/O, no clock, no channels.
//!
//! Each request is answered in each group state as Kafka's classic group
//! coordinator answers it (GroupCoordinator / ClassicGroup).

use std::collections::HashMap;

use bytes::Bytes;

use super::error::GroupError;
use super::offsets::OffsetStore;
use super::records::{self, GroupValue, StoredMember};
use super::state::{Group, GroupState, Member, MemberIdSource, RequestHandle};
use super::{GroupConfig, JoinArgs, JoinResult, LeavingMember, SyncArgs, SyncResult};

mod migration;
mod rebalance;
pub use rebalance::group_record;
pub(crate) use rebalance::prepare_rebalance;
use rebalance::*;

/// A record for `__consumer_offsets`: key, and value or `None` (tombstone).
pub type OffsetsTopicRecord = (Bytes, Option<Bytes>);

/// Something the shard must do after a call into the core.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Answer the parked JoinGroup `handle`.
    Join {
        /// The request.
        handle: RequestHandle,
        /// Its answer.
        result: JoinResult,
    },
    /// Answer the parked SyncGroup `handle`.
    Sync {
        /// The request.
        handle: RequestHandle,
        /// Its answer.
        result: SyncResult,
    },
    /// Append the group's metadata record (nothing waits; a failure is logged).
    Persist {
        /// Group id (selects the `__consumer_offsets` partition).
        group_id: String,
        /// The record.
        record: OffsetsTopicRecord,
    },
    /// Append the leader's assignment of `generation`, then call
    /// [`GroupCore::assignment_stored`] with the outcome: the members'
    /// SyncGroups are answered only once it is stored.
    StoreAssignment {
        /// Group id.
        group_id: String,
        /// Generation the assignment is for.
        generation: i32,
        /// The group metadata record.
        record: OffsetsTopicRecord,
    },
    /// At `at_ms` (ms since the epoch) call [`GroupCore::on_deadline`] with
    /// `group_id` and `at_ms`.
    Timer {
        /// Group id.
        group_id: String,
        /// When (ms since the epoch).
        at_ms: i64,
    },
}

/// The answer to a LeaveGroup.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaveOutcome {
    /// Top-level error (UNKNOWN_MEMBER_ID for an unknown group,
    /// COORDINATOR_NOT_AVAILABLE for a Dead one).
    pub error: Option<GroupError>,
    /// Each member named by the request with its own outcome.
    pub members: Vec<(LeavingMember, Result<(), GroupError>)>,
}

/// Groups and committed offsets of the `__consumer_offsets` partitions a
/// shard coordinates, with the effects queued by the last calls.
#[derive(Debug, Default)]
pub struct GroupCore {
    /// Groups by id.
    pub groups: HashMap<String, Group>,
    /// Committed and transaction-pending offsets.
    pub offsets: OffsetStore,
    /// The suffixes of new member ids (random UUIDs in the shard glue).
    pub member_ids: MemberIdSource,
    /// The consumer groups (KIP-848), in the same namespace.
    pub consumer: super::consumer::ConsumerGroups,
    /// The share groups (KIP-932), in the same namespace.
    pub share: super::share::membership::ShareGroups,
    effects: Vec<Effect>,
}

impl GroupCore {
    /// This broker stopped leading `__consumer_offsets` partition
    /// `partition` (of `partitions`): the groups it coordinates are another
    /// broker's now (Kafka's `onResignation`). Parked joins and syncs are
    /// answered COORDINATOR_NOT_AVAILABLE (their clients find the new
    /// coordinator) and the groups, their committed offsets and their
    /// transaction-pending offsets are forgotten here; the new leader
    /// loads them from the log. Gives how many groups were unloaded.
    pub fn unload_partition(&mut self, partition: i32, partitions: i32) -> usize {
        let ids: Vec<String> = self
            .groups
            .keys()
            .chain(self.offsets.committed.keys())
            .filter(|g| super::records::partition_for_group(g, partitions) == partition)
            .cloned()
            .collect::<std::collections::BTreeSet<String>>()
            .into_iter()
            .collect();
        self.consumer
            .retain(|g| super::records::partition_for_group(g, partitions) != partition);
        self.share
            .retain(|g| super::records::partition_for_group(g, partitions) != partition);
        for id in &ids {
            self.fail_parked(id);
            self.groups.remove(id);
            self.offsets.committed.remove(id);
            for groups in self.offsets.pending_txn.values_mut() {
                groups.remove(id);
            }
        }
        self.offsets
            .pending_txn
            .retain(|_, groups| !groups.is_empty());
        ids.len()
    }

    /// The effects queued since the last call, in the order to apply them.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// Answers every JoinGroup and SyncGroup parked in group `id` with
    /// COORDINATOR_NOT_AVAILABLE (15), as Kafka answers requests to a group
    /// that is gone (the client finds its coordinator again and rejoins).
    /// Called before a group is removed, so no parked request is left
    /// without an answer.
    pub fn fail_parked(&mut self, id: &str) {
        let Some(grp) = self.groups.get_mut(id) else {
            return;
        };
        for m in grp.members.values_mut() {
            if let Some(handle) = m.awaiting_join.take() {
                let result = JoinResult::error(GroupError::CoordinatorNotAvailable, &m.member_id);
                self.effects.push(Effect::Join { handle, result });
            }
            if let Some(handle) = m.awaiting_sync.take() {
                let result = SyncResult::error(GroupError::CoordinatorNotAvailable);
                self.effects.push(Effect::Sync { handle, result });
            }
        }
    }

    /// The answer to a parked JoinGroup whose answer can no longer come
    /// (its response channel went away unanswered, as at shutdown):
    /// UNKNOWN_MEMBER_ID, so the member joins again from scratch.
    pub fn unanswered_join(args: &JoinArgs) -> JoinResult {
        JoinResult::error(GroupError::unknown_member(&args.member_id), &args.member_id)
    }

    /// The answer to a parked SyncGroup whose answer can no longer come:
    /// REBALANCE_IN_PROGRESS, so the member rejoins.
    pub fn unanswered_sync() -> SyncResult {
        SyncResult::error(GroupError::RebalanceInProgress)
    }

    /// The group `id`, created Empty at `now` when absent.
    pub(crate) fn get_or_create(&mut self, id: &str, now: i64) -> &mut Group {
        self.groups
            .entry(id.to_string())
            .or_insert_with(|| Group::new(id, now))
    }

    /// Takes over the groups and offsets of `loaded`, the replay of one
    /// `__consumer_offsets` partition whose groups this core does not hold,
    /// with the effects its replay queued.
    pub fn adopt(&mut self, loaded: GroupCore) {
        self.effects.extend(loaded.effects);
        self.groups.extend(loaded.groups);
        self.consumer.absorb(loaded.consumer);
        self.share.absorb(loaded.share);
        self.offsets.committed.extend(loaded.offsets.committed);
        for (pid, groups) in loaded.offsets.pending_txn {
            self.offsets
                .pending_txn
                .entry(pid)
                .or_default()
                .extend(groups);
        }
    }

    /// Arms the deadlines of the groups of `__consumer_offsets` partition
    /// `partition` (of `partitions`) after it was loaded: loaded members
    /// expire unless their consumers heartbeat.
    pub fn arm_partition(&mut self, partition: i32, partitions: i32, now: i64) {
        for g in self.groups.values_mut() {
            if super::records::partition_for_group(&g.group_id, partitions) == partition {
                schedule(g, now, &mut self.effects);
            }
        }
    }

    // ------------------------------------------------------------ JoinGroup

    /// A JoinGroup parked as `handle`: answered by an [`Effect::Join`] now
    /// (errors, a member already in the current generation, a static member
    /// replacing its old id) or when the rebalance completes.
    pub fn join(&mut self, cfg: &GroupConfig, args: &JoinArgs, handle: RequestHandle, now: i64) {
        let out = &mut self.effects;
        let answer = |out: &mut Vec<Effect>, result: JoinResult| {
            out.push(Effect::Join { handle, result });
        };
        if args.group_id.is_empty() {
            return answer(
                out,
                JoinResult::error(GroupError::InvalidGroupId, &args.member_id),
            );
        }
        if args.session_timeout_ms < cfg.min_session_timeout_ms
            || args.session_timeout_ms > cfg.max_session_timeout_ms
        {
            let e = GroupError::InvalidSessionTimeout {
                session_timeout_ms: args.session_timeout_ms,
                min_ms: cfg.min_session_timeout_ms,
                max_ms: cfg.max_session_timeout_ms,
            };
            return answer(out, JoinResult::error(e, &args.member_id));
        }
        let grp = if args.member_id.is_empty() {
            self.groups
                .entry(args.group_id.clone())
                .or_insert_with(|| Group::new(&args.group_id, now))
        } else {
            match self.groups.get_mut(&args.group_id) {
                Some(g) => g,
                None => {
                    let e = GroupError::unknown_member(&args.member_id);
                    return answer(out, JoinResult::error(e, &args.member_id));
                }
            }
        };
        let ids = &mut self.member_ids;
        match join_step(grp, args, handle, cfg.max_size, now, out, ids) {
            JoinStep::Answer(r) => {
                if let Some(GroupError::MemberIdRequired { member_id }) = &r.error {
                    // KIP-394: the id handed out stays pending until the
                    // member joins with it, or for one session timeout.
                    let until = now + i64::from(args.session_timeout_ms.max(1));
                    grp.pending_members.insert(member_id.clone(), until);
                }
                if r.error.is_none() && args.member_id.is_empty() {
                    // A static member replaced its old id without a
                    // rebalance: persist the new id.
                    out.push(Effect::Persist {
                        group_id: grp.group_id.clone(),
                        record: group_record(grp),
                    });
                }
                answer(out, r);
            }
            JoinStep::Park { rebalance } => {
                if rebalance && grp.state != GroupState::PreparingRebalance {
                    prepare_rebalance(grp, cfg, now, out);
                }
                try_complete_join(grp, false, now, out);
            }
        }
        schedule(grp, now, out);
    }

    // ------------------------------------------------------------ SyncGroup

    /// A SyncGroup parked as `handle`: answered by an [`Effect::Sync`] now
    /// (errors, Stable), or once the leader's assignment is stored.
    pub fn sync(&mut self, args: &SyncArgs, handle: RequestHandle, now: i64) {
        let out = &mut self.effects;
        let result = match self.groups.get_mut(&args.group_id) {
            None => Err(GroupError::unknown_member(&args.member_id)),
            Some(grp) => sync_step(grp, args, handle, now, out),
        };
        match result {
            Ok(Some(r)) => out.push(Effect::Sync { handle, result: r }),
            Ok(None) => {}
            Err(e) => out.push(Effect::Sync {
                handle,
                result: SyncResult::error(e),
            }),
        }
    }

    /// The leader's assignment of `generation` was appended (`stored` is
    /// `Ok`) or could not be (its error): the parked SyncGroups get their
    /// assignment and the group becomes Stable, or they get the error and
    /// the group rebalances. Nothing happens if the group moved on.
    pub fn assignment_stored(
        &mut self,
        cfg: &GroupConfig,
        group_id: &str,
        generation: i32,
        stored: Result<(), GroupError>,
        now: i64,
    ) {
        let out = &mut self.effects;
        let Some(grp) = self.groups.get_mut(group_id) else {
            return;
        };
        if grp.state != GroupState::CompletingRebalance || grp.generation != generation {
            return;
        }
        let (ptype, pname) = (grp.protocol_type.clone(), grp.protocol_name.clone());
        match stored {
            Ok(()) => {
                grp.transition(GroupState::Stable, now);
                for m in grp.members.values_mut() {
                    if let Some(handle) = m.awaiting_sync.take() {
                        out.push(Effect::Sync {
                            handle,
                            result: SyncResult {
                                error: None,
                                protocol_type: ptype.clone(),
                                protocol_name: pname.clone(),
                                assignment: m.assignment.clone(),
                            },
                        });
                    }
                }
            }
            Err(e) => {
                for m in grp.members.values_mut() {
                    m.assignment = Bytes::new();
                    if let Some(handle) = m.awaiting_sync.take() {
                        out.push(Effect::Sync {
                            handle,
                            result: SyncResult::error(e.clone()),
                        });
                    }
                }
                prepare_rebalance(grp, cfg, now, out);
            }
        }
        schedule(grp, now, out);
    }

    // ------------------------------------------------------------ Heartbeat

    /// A Heartbeat: refreshes the member's session. Kafka's answers: no
    /// group → UNKNOWN_MEMBER_ID; Dead → COORDINATOR_NOT_AVAILABLE; then
    /// the member and generation checks; then by state: Empty →
    /// UNKNOWN_MEMBER_ID, PreparingRebalance → REBALANCE_IN_PROGRESS,
    /// CompletingRebalance and Stable → success.
    pub fn heartbeat(
        &mut self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        instance: &Option<String>,
        now: i64,
    ) -> Result<(), GroupError> {
        let Some(grp) = self.groups.get_mut(group_id) else {
            return Err(GroupError::unknown_member(member_id));
        };
        if grp.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        check_member(grp, member_id, instance)?;
        check_generation(grp, generation)?;
        let refresh = |grp: &mut Group| {
            if let Some(m) = grp.members.get_mut(member_id) {
                m.last_heartbeat_ms = now;
            }
        };
        match grp.state {
            GroupState::Empty => Err(GroupError::unknown_member(member_id)),
            GroupState::Dead => Err(GroupError::CoordinatorNotAvailable),
            GroupState::PreparingRebalance => {
                refresh(grp);
                Err(GroupError::RebalanceInProgress)
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                refresh(grp);
                Ok(())
            }
        }
    }

    // ------------------------------------------------------------ LeaveGroup

    /// A LeaveGroup of `members` (by member id, or by `group.instance.id`
    /// with an empty member id, KIP-345). Removing a member rebalances.
    pub fn leave(
        &mut self,
        cfg: &GroupConfig,
        group_id: &str,
        members: Vec<LeavingMember>,
        now: i64,
    ) -> LeaveOutcome {
        let out = &mut self.effects;
        let Some(grp) = self.groups.get_mut(group_id) else {
            let members = members
                .into_iter()
                .map(|m| {
                    let e = GroupError::unknown_member(&m.member_id);
                    (m, Err(e))
                })
                .collect();
            return LeaveOutcome {
                error: Some(GroupError::unknown_member("")),
                members,
            };
        };
        match grp.state {
            GroupState::Dead => {
                return LeaveOutcome {
                    error: Some(GroupError::CoordinatorNotAvailable),
                    members: Vec::new(),
                }
            }
            GroupState::Empty
            | GroupState::PreparingRebalance
            | GroupState::CompletingRebalance
            | GroupState::Stable => {}
        }
        let mut results = Vec::new();
        for lm in members {
            if grp.pending_members.remove(&lm.member_id).is_some() {
                results.push((lm, Ok(())));
                continue;
            }
            let resolved = match &lm.group_instance_id {
                Some(i) => match grp.static_members.get(i) {
                    Some(id) if lm.member_id.is_empty() || *id == lm.member_id => Ok(id.clone()),
                    Some(_) => Err(GroupError::FencedInstanceId {
                        group_instance_id: Some(i.clone()),
                    }),
                    None => Err(GroupError::unknown_member(&lm.member_id)),
                },
                None if grp.members.contains_key(&lm.member_id) => Ok(lm.member_id.clone()),
                None => Err(GroupError::unknown_member(&lm.member_id)),
            };
            match resolved {
                Ok(id) => {
                    log::info!("member {id} left group {group_id}");
                    let e = GroupError::unknown_member(&id);
                    remove_member_and_rebalance(grp, cfg, &id, e, now, out);
                    results.push((lm, Ok(())));
                }
                Err(e) => results.push((lm, Err(e))),
            }
        }
        schedule(grp, now, out);
        LeaveOutcome {
            error: None,
            members: results,
        }
    }

    // ------------------------------------------------------------ deadlines

    /// A timer armed for `at_ms` fired at `now`: lapses pending member ids,
    /// expires members whose session ended (not while they wait in a join),
    /// completes the join at the initial rebalance delay or forces it at the
    /// rebalance timeout, and arms the next deadline.
    pub fn on_deadline(&mut self, cfg: &GroupConfig, group_id: &str, at_ms: i64, now: i64) {
        let out = &mut self.effects;
        let Some(grp) = self.groups.get_mut(group_id) else {
            return;
        };
        if grp.timer_at_ms == Some(at_ms) {
            grp.timer_at_ms = None;
        }
        match grp.state {
            GroupState::Dead => return,
            GroupState::Empty
            | GroupState::PreparingRebalance
            | GroupState::CompletingRebalance
            | GroupState::Stable => {}
        }
        grp.pending_members.retain(|_, until| *until > now);
        let expired: Vec<String> = grp
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none() && m.session_deadline_ms() <= now)
            .map(|m| m.member_id.clone())
            .collect();
        for id in expired {
            log::info!(
                "member {id} of group {} expired (no heartbeat within session.timeout.ms)",
                grp.group_id
            );
            let e = GroupError::unknown_member(&id);
            remove_member_and_rebalance(grp, cfg, &id, e, now, out);
        }
        if grp.state == GroupState::PreparingRebalance {
            let force = now >= grp.rebalance_deadline_ms;
            try_complete_join(grp, force, now, out);
        }
        schedule(grp, now, out);
    }
}

// ---------------------------------------------------------------- checks

/// Kafka's member check: a request naming a `group.instance.id` held by
/// another member is fenced; an unknown member id is UNKNOWN_MEMBER_ID.
pub(crate) fn check_member(
    grp: &Group,
    member_id: &str,
    instance: &Option<String>,
) -> Result<(), GroupError> {
    match grp.members.get(member_id) {
        None => {
            if let Some(i) = instance {
                if grp.static_members.contains_key(i) {
                    return Err(GroupError::FencedInstanceId {
                        group_instance_id: Some(i.clone()),
                    });
                }
            }
            Err(GroupError::unknown_member(member_id))
        }
        Some(m) if &m.group_instance_id != instance => Err(GroupError::FencedInstanceId {
            group_instance_id: instance.clone(),
        }),
        Some(_) => Ok(()),
    }
}

/// ILLEGAL_GENERATION unless `generation` is the group's.
pub(crate) fn check_generation(grp: &Group, generation: i32) -> Result<(), GroupError> {
    if generation == grp.generation {
        Ok(())
    } else {
        Err(GroupError::IllegalGeneration {
            generation,
            current: grp.generation,
        })
    }
}

// ---------------------------------------------------------------- join

enum JoinStep {
    Answer(JoinResult),
    Park { rebalance: bool },
}

fn new_member(args: &JoinArgs, member_id: &str, now: i64) -> Member {
    Member {
        member_id: member_id.to_string(),
        group_instance_id: args.group_instance_id.clone(),
        client_id: args.client_id.clone(),
        client_host: args.client_host.clone(),
        session_timeout_ms: args.session_timeout_ms,
        rebalance_timeout_ms: args.rebalance_timeout_ms,
        protocol_type: args.protocol_type.clone(),
        protocols: args.protocols.clone(),
        assignment: Bytes::new(),
        last_heartbeat_ms: now,
        awaiting_join: None,
        awaiting_sync: None,
    }
}

/// The members as the leader's JoinGroup answer lists them.
fn member_list(grp: &Group) -> Vec<(String, Option<String>, Bytes)> {
    let protocol = grp.protocol_name.clone().unwrap_or_default();
    grp.members
        .values()
        .map(|m| {
            (
                m.member_id.clone(),
                m.group_instance_id.clone(),
                m.metadata_for(&protocol),
            )
        })
        .collect()
}

fn current_join_result(grp: &Group, member_id: &str) -> JoinResult {
    let leader = grp.leader.clone().unwrap_or_default();
    JoinResult {
        error: None,
        generation_id: grp.generation,
        protocol_type: grp.protocol_type.clone(),
        protocol_name: grp.protocol_name.clone(),
        members: if member_id == leader {
            member_list(grp)
        } else {
            Vec::new()
        },
        leader,
        member_id: member_id.to_string(),
        skip_assignment: false,
    }
}

fn join_step(
    grp: &mut Group,
    args: &JoinArgs,
    handle: RequestHandle,
    max_size: usize,
    now: i64,
    out: &mut Vec<Effect>,
    member_ids: &mut MemberIdSource,
) -> JoinStep {
    let err = |e: GroupError| JoinStep::Answer(JoinResult::error(e, &args.member_id));
    if grp.state == GroupState::Dead {
        return err(GroupError::CoordinatorNotAvailable);
    }
    if !grp.supports(&args.protocol_type, &args.protocols) {
        return err(GroupError::InconsistentGroupProtocol);
    }
    if args.member_id.is_empty() {
        let new_id = member_ids.member_id(&args.client_id);
        if let Some(instance) = &args.group_instance_id {
            if let Some(old_id) = grp.static_members.get(instance).cloned() {
                return static_rejoin(grp, args, &old_id, &new_id, handle, now, out);
            }
        } else if args.require_known_member_id {
            return JoinStep::Answer(JoinResult::error(
                GroupError::MemberIdRequired {
                    member_id: new_id.clone(),
                },
                &new_id,
            ));
        }
        if grp.members.len() >= max_size {
            return err(GroupError::GroupMaxSizeReached { max_size });
        }
        add_member(grp, args, &new_id, handle, now);
        return JoinStep::Park { rebalance: true };
    }
    let id = args.member_id.clone();
    if grp.pending_members.remove(&id).is_some() {
        if grp.members.len() >= max_size {
            return err(GroupError::GroupMaxSizeReached { max_size });
        }
        add_member(grp, args, &id, handle, now);
        return JoinStep::Park { rebalance: true };
    }
    if let Err(e) = check_member(grp, &id, &args.group_instance_id) {
        return err(e);
    }
    let same = grp
        .members
        .get(&id)
        .is_some_and(|m| m.same_protocols(&args.protocols));
    let is_leader = grp.leader.as_deref() == Some(id.as_str());
    match grp.state {
        // No member can be known in these states: the member resets its
        // generation and rejoins.
        GroupState::Empty | GroupState::Dead => err(GroupError::unknown_member(&id)),
        GroupState::PreparingRebalance => {
            update_member(grp, args, handle, now, out);
            JoinStep::Park { rebalance: false }
        }
        // Same metadata: the member gets the current generation again.
        GroupState::CompletingRebalance if same => JoinStep::Answer(current_join_result(grp, &id)),
        GroupState::Stable if same && !is_leader => JoinStep::Answer(current_join_result(grp, &id)),
        // Changed metadata, or the leader rejoining a Stable group: rebalance.
        GroupState::CompletingRebalance | GroupState::Stable => {
            update_member(grp, args, handle, now, out);
            JoinStep::Park { rebalance: true }
        }
    }
}

fn add_member(grp: &mut Group, args: &JoinArgs, id: &str, handle: RequestHandle, now: i64) {
    if grp.members.is_empty() {
        grp.protocol_type = Some(args.protocol_type.clone());
    }
    let mut m = new_member(args, id, now);
    m.awaiting_join = Some(handle);
    if let Some(i) = &args.group_instance_id {
        grp.static_members.insert(i.clone(), id.to_string());
    }
    grp.members.insert(id.to_string(), m);
}

fn update_member(
    grp: &mut Group,
    args: &JoinArgs,
    handle: RequestHandle,
    now: i64,
    out: &mut Vec<Effect>,
) {
    if let Some(m) = grp.members.get_mut(&args.member_id) {
        m.protocols = args.protocols.clone();
        m.session_timeout_ms = args.session_timeout_ms;
        m.rebalance_timeout_ms = args.rebalance_timeout_ms;
        m.last_heartbeat_ms = now;
        if let Some(old) = m.awaiting_join.replace(handle) {
            out.push(Effect::Join {
                handle: old,
                result: JoinResult::error(
                    GroupError::unknown_member(&args.member_id),
                    &args.member_id,
                ),
            });
        }
    }
}

/// KIP-345: a known `group.instance.id` rejoins with a new member id. The old
/// id is fenced; a Stable group with unchanged protocols keeps its assignment
/// and generation (no rebalance).
fn static_rejoin(
    grp: &mut Group,
    args: &JoinArgs,
    old_id: &str,
    new_id: &str,
    handle: RequestHandle,
    now: i64,
    out: &mut Vec<Effect>,
) -> JoinStep {
    let Some(mut old) = grp.members.shift_remove(old_id) else {
        grp.static_members
            .remove(args.group_instance_id.as_deref().unwrap_or_default());
        add_member(grp, args, new_id, handle, now);
        return JoinStep::Park { rebalance: true };
    };
    let fenced = GroupError::FencedInstanceId {
        group_instance_id: args.group_instance_id.clone(),
    };
    if let Some(h) = old.awaiting_join.take() {
        out.push(Effect::Join {
            handle: h,
            result: JoinResult::error(fenced.clone(), old_id),
        });
    }
    if let Some(h) = old.awaiting_sync.take() {
        out.push(Effect::Sync {
            handle: h,
            result: SyncResult::error(fenced),
        });
    }
    let same = old.same_protocols(&args.protocols);
    let mut m = new_member(args, new_id, now);
    m.assignment = old.assignment.clone();
    grp.members.insert(new_id.to_string(), m);
    if let Some(i) = &args.group_instance_id {
        grp.static_members.insert(i.clone(), new_id.to_string());
    }
    if grp.leader.as_deref() == Some(old_id) {
        grp.leader = Some(new_id.to_string());
    }
    // Kafka's rule for a static member rejoining a Stable group: no
    // rebalance when the protocol the next generation would select is the
    // current one. The metadata bytes may differ (a restarted Java consumer
    // sends its owned partitions and generation in them); the member keeps
    // its old assignment either way.
    let selected_unchanged =
        grp.protocol_name.is_some() && grp.select_protocol() == grp.protocol_name;
    let park = |grp: &mut Group, rebalance: bool| {
        if let Some(m) = grp.members.get_mut(new_id) {
            m.awaiting_join = Some(handle);
        }
        JoinStep::Park { rebalance }
    };
    match grp.state {
        GroupState::Stable if same || selected_unchanged => {
            let mut r = current_join_result(grp, new_id);
            // The leader need not recompute the assignment (KIP-814).
            r.skip_assignment = r.leader == new_id;
            JoinStep::Answer(r)
        }
        GroupState::PreparingRebalance => park(grp, false),
        GroupState::Stable | GroupState::CompletingRebalance => park(grp, true),
        // A static member is only known while the group has members; a
        // group loaded Empty or Dead has none. Rebalance as for a new member.
        GroupState::Empty | GroupState::Dead => park(grp, true),
    }
}
