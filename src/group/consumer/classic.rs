//! Classic members inside a consumer group, and the online conversions
//! between the two kinds of group (KIP-848's migration, Kafka 4.4's
//! `group.consumer.migration.policy`).
//!
//! A consumer group answers the classic protocol's JoinGroup, SyncGroup,
//! Heartbeat and LeaveGroup of members that still speak it: the member's
//! `consumer` protocol subscription (ConsumerProtocolSubscription) becomes
//! its subscription, the server assignor computes its target, and the
//! JoinGroup reconciles it from the partitions it says it owns (revoke
//! before assign, as for consumer-protocol members). The SyncGroup gives
//! the assigned partitions as a ConsumerProtocolAssignment; the generation
//! is the member epoch. A classic member learns of a new epoch only by
//! rejoining, so its Heartbeat answers REBALANCE_IN_PROGRESS when the group
//! moved past it, when it must revoke, or when the partitions it waits for
//! are free.
//!
//! Conversions: [`ConsumerGroups::upgrade`] turns a live classic group into
//! a consumer group (its members keep their generation as epoch and their
//! assignment); [`ConsumerGroups::downgrade`] takes a consumer group whose
//! members all speak the classic protocol out, for the classic core to
//! rebuild and rebalance.

use std::collections::BTreeSet;

use bytes::Bytes;

use super::embedded::{self, parse_subscription};

use super::group::{assigned_plain, current_record, member_tombstones, to_parts, Group, Member};
use super::reconcile::{Current, MemberState, Owned};
use super::records::{ClassicMemberMetadata, ConsumerRecord, MemberMetadata};
use super::{Assignment, ConsumerGroupConfig, ConsumerGroups, TopicsView};
use crate::group::error::GroupError;
use crate::group::membership::Effect;
use crate::group::state::MemberIdSource;
use crate::group::JoinArgs;

/// The protocol type every member of a consumer group speaks.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// A classic member's successful join of a consumer group.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinArgsed {
    /// The member's id.
    pub member_id: String,
    /// The generation: the member's epoch.
    pub generation_id: i32,
    /// The protocol: the first the member named.
    pub protocol_name: String,
}

/// A classic group member, as the conversions carry it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClassicMember {
    /// Member id.
    pub member_id: String,
    /// Static membership id.
    pub instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Session timeout (ms).
    pub session_timeout_ms: i32,
    /// Rebalance timeout (ms).
    pub rebalance_timeout_ms: i32,
    /// (protocol name, ConsumerProtocolSubscription) in preference order.
    pub protocols: Vec<(String, Bytes)>,
    /// The member's assignment (ConsumerProtocolAssignment; empty if none).
    pub assignment: Bytes,
}

/// A classic group, as the conversions carry it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClassicSnapshot {
    /// Group id.
    pub group_id: String,
    /// Generation (classic) or group epoch (consumer).
    pub generation: i32,
    /// The protocol in use (classic: selected at the last join; from a
    /// consumer group: the first protocol every member supports).
    pub protocol_name: Option<String>,
    /// Members, the leader (the first) first.
    pub members: Vec<ClassicMember>,
}

/// A ConsumerProtocolAssignment of `assigned` (topics by name, unknown
/// topic ids left out) at `version` (the member's subscription's).
fn encode_assignment(assigned: &Assignment, topics: &dyn TopicsView, version: i16) -> Bytes {
    let parts: Vec<(String, Vec<i32>)> = assigned
        .iter()
        .filter_map(|(t, ps)| {
            topics
                .by_id(*t)
                .map(|info| (info.name, ps.iter().copied().collect()))
        })
        .collect();
    embedded::encode_assignment(&parts, version)
}

/// (topic name, partitions) as an assignment by topic id (unknown topics
/// dropped).
fn by_id(parts: &[(String, Vec<i32>)], topics: &dyn TopicsView) -> Assignment {
    let mut a = Assignment::new();
    for (name, ps) in parts {
        if ps.is_empty() {
            continue;
        }
        if let Some(info) = topics.by_name(name) {
            a.entry(info.id).or_default().extend(
                ps.iter()
                    .copied()
                    .filter(|p| *p >= 0 && *p < info.partitions),
            );
        }
    }
    a.retain(|_, ps| !ps.is_empty());
    a
}

fn is_classic(m: &Member) -> bool {
    m.meta.classic_member_metadata.is_some()
}

/// The member a classic request names: by instance id for static members
/// (UNKNOWN_MEMBER_ID when no member holds it, FENCED_INSTANCE_ID when
/// another member id does), by member id otherwise; it must speak the
/// classic protocol (UNKNOWN_MEMBER_ID otherwise, as Kafka).
fn classic_member<'g>(
    group: &'g Group,
    member_id: &str,
    instance_id: Option<&str>,
) -> Result<(&'g String, &'g Member), GroupError> {
    let id = match instance_id {
        Some(inst) => {
            let holder = group
                .instances
                .get(inst)
                .ok_or_else(|| GroupError::unknown_member(member_id))?;
            if holder != member_id {
                return Err(GroupError::FencedInstanceId {
                    group_instance_id: Some(inst.to_string()),
                });
            }
            holder.as_str()
        }
        None => member_id,
    };
    let (id, m) = group
        .members
        .get_key_value(id)
        .ok_or_else(|| GroupError::unknown_member(member_id))?;
    if !is_classic(m) {
        return Err(GroupError::unknown_member(member_id));
    }
    Ok((id, m))
}

/// Whether a partition of `member_id`'s target that it does not have yet is
/// still held by another member.
fn waits_on_unreleased(group: &Group, member_id: &str, m: &Member) -> bool {
    let Some(target) = group.targets.get(member_id) else {
        return false;
    };
    target.iter().any(|(t, ps)| {
        ps.iter().any(|p| {
            !m.current.assigned.get(t).is_some_and(|a| a.contains_key(p))
                && group.holders.get(&(*t, *p)).is_some_and(|h| h != member_id)
        })
    })
}

impl ConsumerGroups {
    /// Whether consumer group `group_id` has members and every one speaks
    /// the classic protocol (false for no such group).
    pub fn all_classic(&self, group_id: &str) -> bool {
        self.groups
            .get(group_id)
            .is_some_and(|g| !g.members.is_empty() && g.members.values().all(is_classic))
    }

    /// Removes the empty consumer group `group_id` (a classic JoinGroup
    /// replaces it by a classic group, as Kafka 4.4 does), giving its
    /// tombstones; nothing when it has members or does not exist.
    pub fn remove_empty(&mut self, group_id: &str) -> Vec<ConsumerRecord> {
        let mut records = Vec::new();
        if self
            .groups
            .get(group_id)
            .is_some_and(|g| g.members.is_empty())
        {
            self.groups.remove(group_id);
            group_tombstones(group_id, &mut records);
        }
        records
    }

    /// A classic JoinGroup to the consumer group `group_id` (Kafka's
    /// `classicGroupJoinToConsumerGroup`). Errors: GROUP_MAX_SIZE_REACHED
    /// (`group.consumer.max.size`), INCONSISTENT_GROUP_PROTOCOL (not the
    /// `consumer` protocol type, no protocol the group's classic members
    /// all support, or an unreadable subscription), MEMBER_ID_REQUIRED (v4+
    /// dynamic member without an id: rejoin with the id given),
    /// FENCED_INSTANCE_ID, GROUP_ID_NOT_FOUND (no such group). Gives the
    /// records to append before answering.
    #[allow(clippy::too_many_arguments)]
    pub fn classic_join(
        &mut self,
        cfg: &ConsumerGroupConfig,
        args: &JoinArgs,
        topics: &dyn TopicsView,
        ids: &mut MemberIdSource,
        now: i64,
        out: &mut Vec<Effect>,
    ) -> (Result<JoinArgsed, GroupError>, Vec<ConsumerRecord>) {
        let mut records = Vec::new();
        let result = match self.groups.get_mut(&args.group_id) {
            None => Err(GroupError::GroupIdNotFound),
            Some(group) => {
                group.configure(cfg);
                join(group, cfg, args, topics, ids, now, out, &mut records)
            }
        };
        if result.is_err() {
            records.clear();
        }
        (result, records)
    }

    /// A classic SyncGroup to a consumer group (Kafka's
    /// `classicGroupSyncToConsumerGroup`): the member's assigned partitions
    /// as a ConsumerProtocolAssignment. Errors: UNKNOWN_MEMBER_ID,
    /// FENCED_INSTANCE_ID, ILLEGAL_GENERATION (not the member's epoch),
    /// INCONSISTENT_GROUP_PROTOCOL (another protocol type or name),
    /// REBALANCE_IN_PROGRESS (the group epoch moved past the member and it
    /// has nothing to revoke: rejoin). Restarts the member's session.
    #[allow(clippy::too_many_arguments)]
    pub fn classic_sync(
        &mut self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        topics: &dyn TopicsView,
        now: i64,
        out: &mut Vec<Effect>,
    ) -> Result<(String, Bytes), GroupError> {
        let group = self
            .groups
            .get_mut(group_id)
            .ok_or_else(|| GroupError::unknown_member(member_id))?;
        let (id, m) = classic_member(group, member_id, instance_id)?;
        check_generation(m, generation)?;
        let classic = m.meta.classic_member_metadata.clone().unwrap_or_default();
        let first = classic.supported_protocols.first();
        let name = first.map(|(n, _)| n.clone()).unwrap_or_default();
        let version = first
            .map(|(_, md)| md)
            .filter(|md| md.len() >= 2)
            .map_or(0, |md| i16::from_be_bytes([md[0], md[1]]));
        if protocol_type.is_some_and(|t| t != CONSUMER_PROTOCOL_TYPE)
            || protocol_name.is_some_and(|n| n != name)
        {
            return Err(GroupError::InconsistentGroupProtocol);
        }
        if group.epoch > m.current.epoch && m.current.state != MemberState::UnrevokedPartitions {
            return Err(GroupError::RebalanceInProgress);
        }
        let assignment = encode_assignment(&assigned_plain(&m.current), topics, version);
        let id = id.clone();
        restart_session(group, group_id, &id, classic.session_timeout_ms, now, out);
        Ok((name, assignment))
    }

    /// A classic Heartbeat to a consumer group (Kafka's
    /// `classicGroupHeartbeatToConsumerGroup`): restarts the member's
    /// session; REBALANCE_IN_PROGRESS when the group epoch is past the
    /// member's, when it must revoke partitions, or when the partitions it
    /// waits for are free (each makes it rejoin). Errors: UNKNOWN_MEMBER_ID,
    /// FENCED_INSTANCE_ID, ILLEGAL_GENERATION.
    pub fn classic_heartbeat(
        &mut self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        now: i64,
        out: &mut Vec<Effect>,
    ) -> Result<(), GroupError> {
        let group = self
            .groups
            .get_mut(group_id)
            .ok_or_else(|| GroupError::unknown_member(member_id))?;
        let (id, m) = classic_member(group, member_id, instance_id)?;
        check_generation(m, generation)?;
        let rejoin = m.current.epoch < group.epoch
            || m.current.state == MemberState::UnrevokedPartitions
            || (m.current.state == MemberState::UnreleasedPartitions
                && !waits_on_unreleased(group, id, m));
        let session = m
            .meta
            .classic_member_metadata
            .as_ref()
            .map_or(0, |c| c.session_timeout_ms);
        let id = id.clone();
        restart_session(group, group_id, &id, session, now, out);
        if rejoin {
            Err(GroupError::RebalanceInProgress)
        } else {
            Ok(())
        }
    }

    /// A classic LeaveGroup to a consumer group: each named member (by
    /// instance id or member id, as [`ConsumerGroups::classic_sync`] finds
    /// it) is removed; the group epoch is bumped once if any was. Gives each
    /// member's outcome in order and the records to append.
    pub fn classic_leave(
        &mut self,
        group_id: &str,
        leaving: &[(String, Option<String>)],
        topics: &dyn TopicsView,
        now: i64,
    ) -> (Vec<Result<(), GroupError>>, Vec<ConsumerRecord>) {
        let mut records = Vec::new();
        let Some(group) = self.groups.get_mut(group_id) else {
            let e = GroupError::unknown_member("");
            return (leaving.iter().map(|_| Err(e.clone())).collect(), records);
        };
        let mut outcomes = Vec::new();
        let mut removed = false;
        for (member_id, instance_id) in leaving {
            let found = match instance_id {
                // LeaveGroup v3+ may name a static member by instance id only.
                Some(inst) if member_id.is_empty() => group
                    .instances
                    .get(inst)
                    .cloned()
                    .ok_or_else(|| GroupError::unknown_member(member_id))
                    .and_then(|id| {
                        classic_member(group, &id, Some(inst)).map(|(id, _)| id.clone())
                    }),
                _ => classic_member(group, member_id, instance_id.as_deref())
                    .map(|(id, _)| id.clone()),
            };
            match found {
                Ok(id) => {
                    group.remove_member(group_id, &id, &mut records);
                    removed = true;
                    outcomes.push(Ok(()));
                }
                Err(e) => outcomes.push(Err(e)),
            }
        }
        if removed {
            group.bump(group_id, topics, now, &mut records);
        }
        (outcomes, records)
    }

    /// Converts the live classic group `snapshot` into a consumer group
    /// (Kafka's `ConsumerGroup.fromClassicGroup`): each member keeps the
    /// generation as its epoch and its assignment as both its current and
    /// target assignment; its session restarts with its classic session
    /// timeout. Gives the consumer group's records (5 for each member, 3,
    /// 7 for each, 6, 8 for each) to append after the classic group's
    /// tombstone. Err with a message when a member's subscription cannot
    /// be read.
    pub fn upgrade(
        &mut self,
        cfg: &ConsumerGroupConfig,
        snapshot: &ClassicSnapshot,
        topics: &dyn TopicsView,
        now: i64,
        out: &mut Vec<Effect>,
    ) -> Result<Vec<ConsumerRecord>, String> {
        let gid = &snapshot.group_id;
        let epoch = snapshot.generation.max(1);
        let mut timers = Vec::new();
        let mut group = Group::new(cfg.assignors.clone());
        group.epoch = epoch;
        group.assignment_epoch = epoch;
        // No target was computed by this group yet: the first bump (the
        // joining consumer-protocol member's) computes one at once rather
        // than waiting out `group.consumer.assignment.interval.ms`.
        group.assignment_ts = 0;
        for cm in &snapshot.members {
            let chosen = snapshot
                .protocol_name
                .as_ref()
                .and_then(|p| cm.protocols.iter().find(|(n, _)| n == p))
                .or(cm.protocols.first());
            let sub = chosen
                .and_then(|(_, md)| parse_subscription(md))
                .ok_or_else(|| {
                    format!(
                        "Cannot upgrade classic group {gid} to consumer group: member {} has no readable consumer protocol subscription.",
                        cm.member_id
                    )
                })?;
            let assigned = by_id(
                &embedded::parse_assignment(&cm.assignment).unwrap_or_default(),
                topics,
            );
            let mut names = sub.topics.clone();
            names.sort();
            names.dedup();
            let meta = MemberMetadata {
                instance_id: cm.instance_id.clone(),
                rack_id: sub.rack.clone(),
                client_id: cm.client_id.clone(),
                client_host: cm.client_host.clone(),
                subscribed_topic_names: names,
                subscribed_topic_regex: None,
                rebalance_timeout_ms: cm.rebalance_timeout_ms,
                server_assignor: None,
                classic_member_metadata: Some(ClassicMemberMetadata {
                    session_timeout_ms: cm.session_timeout_ms,
                    supported_protocols: cm.protocols.clone(),
                }),
            };
            let current = Current {
                epoch,
                previous_epoch: epoch,
                state: MemberState::Stable,
                assigned: with_epoch(&assigned, epoch),
                pending: Assignment::new(),
            };
            if let Some(inst) = &cm.instance_id {
                group.instances.insert(inst.clone(), cm.member_id.clone());
            }
            let at_ms = now + i64::from(cm.session_timeout_ms.max(1));
            group.members.insert(
                cm.member_id.clone(),
                Member {
                    meta,
                    current: Current::default(),
                    session_deadline: Some(at_ms),
                    rebalance_deadline: None,
                },
            );
            group.set_current(&cm.member_id, current);
            group.targets.insert(cm.member_id.clone(), assigned);
            timers.push(Effect::Timer {
                group_id: gid.clone(),
                at_ms,
            });
        }
        let (_, _, hash) = group.subscriptions(topics);
        group.metadata_hash = hash;
        let mut records = Vec::new();
        for (id, m) in &group.members {
            records.push(ConsumerRecord::MemberMetadata {
                group_id: gid.clone(),
                member_id: id.clone(),
                value: Some(m.meta.clone()),
            });
        }
        records.push(ConsumerRecord::GroupMetadata {
            group_id: gid.clone(),
            value: Some((epoch, hash)),
        });
        for (id, target) in &group.targets {
            records.push(ConsumerRecord::TargetAssignmentMember {
                group_id: gid.clone(),
                member_id: id.clone(),
                value: Some(to_parts(target)),
            });
        }
        records.push(ConsumerRecord::TargetAssignmentMetadata {
            group_id: gid.clone(),
            value: Some((epoch, 0)),
        });
        for (id, m) in &group.members {
            records.push(current_record(gid, id, &m.current));
        }
        self.groups.insert(gid.clone(), group);
        out.append(&mut timers);
        Ok(records)
    }

    /// Takes the consumer group `group_id` out for conversion to a classic
    /// group when it has members, all speak the classic protocol and they
    /// are at most `classic_max_size` (`group.max.size`); gives the
    /// consumer group's tombstones and the classic group to build (the
    /// members' epoch as generation, each member's assigned partitions as
    /// its assignment). None otherwise (the group is left as it is).
    pub fn downgrade(
        &mut self,
        group_id: &str,
        classic_max_size: usize,
        topics: &dyn TopicsView,
    ) -> Option<(Vec<ConsumerRecord>, ClassicSnapshot)> {
        if !self.all_classic(group_id)
            || self
                .groups
                .get(group_id)
                .is_some_and(|g| g.members.len() > classic_max_size)
        {
            return None;
        }
        let group = self.groups.remove(group_id)?;
        let mut records = Vec::new();
        let mut members = Vec::new();
        for (id, m) in &group.members {
            let classic = m.meta.classic_member_metadata.clone().unwrap_or_default();
            let version = classic
                .supported_protocols
                .first()
                .map(|(_, md)| md)
                .filter(|md| md.len() >= 2)
                .map_or(0, |md| i16::from_be_bytes([md[0], md[1]]));
            members.push(ClassicMember {
                member_id: id.clone(),
                instance_id: m.meta.instance_id.clone(),
                client_id: m.meta.client_id.clone(),
                client_host: m.meta.client_host.clone(),
                session_timeout_ms: classic.session_timeout_ms,
                rebalance_timeout_ms: m.meta.rebalance_timeout_ms,
                protocols: classic.supported_protocols.clone(),
                assignment: encode_assignment(&assigned_plain(&m.current), topics, version),
            });
            member_tombstones(group_id, id, &mut records);
        }
        group_tombstones(group_id, &mut records);
        let protocol_name = members.first().and_then(|first| {
            first
                .protocols
                .iter()
                .map(|(n, _)| n)
                .find(|n| {
                    members
                        .iter()
                        .all(|m| m.protocols.iter().any(|(o, _)| o == *n))
                })
                .cloned()
        });
        Some((
            records,
            ClassicSnapshot {
                group_id: group_id.to_string(),
                // The generation the classic members joined at: their
                // epoch (a leave just bumped the group epoch past it), so
                // their commits are accepted until they rejoin.
                generation: group
                    .members
                    .values()
                    .map(|m| m.current.epoch)
                    .max()
                    .unwrap_or(group.epoch)
                    .max(1),
                protocol_name,
                members,
            },
        ))
    }
}

/// ILLEGAL_GENERATION unless `generation` is the member's epoch.
fn check_generation(m: &Member, generation: i32) -> Result<(), GroupError> {
    if generation != m.current.epoch {
        return Err(GroupError::IllegalGeneration {
            generation,
            current: m.current.epoch,
        });
    }
    Ok(())
}

/// Restarts a classic member's session (its own `session.timeout.ms`).
fn restart_session(
    group: &mut Group,
    group_id: &str,
    member_id: &str,
    session_timeout_ms: i32,
    now: i64,
    out: &mut Vec<Effect>,
) {
    if let Some(m) = group.members.get_mut(member_id) {
        let at_ms = now + i64::from(session_timeout_ms.max(1));
        m.session_deadline = Some(at_ms);
        out.push(Effect::Timer {
            group_id: group_id.to_string(),
            at_ms,
        });
    }
}

/// Partitions assigned at `epoch`.
fn with_epoch(a: &Assignment, epoch: i32) -> Owned {
    a.iter()
        .map(|(t, ps)| (*t, ps.iter().map(|p| (*p, epoch)).collect()))
        .collect()
}

/// The group-level tombstones, after the members' (6, 3).
fn group_tombstones(group_id: &str, records: &mut Vec<ConsumerRecord>) {
    records.push(ConsumerRecord::TargetAssignmentMetadata {
        group_id: group_id.to_string(),
        value: None,
    });
    records.push(ConsumerRecord::GroupMetadata {
        group_id: group_id.to_string(),
        value: None,
    });
}

/// The join itself (see [`ConsumerGroups::classic_join`]).
#[allow(clippy::too_many_arguments)]
fn join(
    group: &mut Group,
    cfg: &ConsumerGroupConfig,
    args: &JoinArgs,
    topics: &dyn TopicsView,
    ids: &mut MemberIdSource,
    now: i64,
    out: &mut Vec<Effect>,
    records: &mut Vec<ConsumerRecord>,
) -> Result<JoinArgsed, GroupError> {
    let gid = &args.group_id;
    let unknown = args.member_id.is_empty();
    let member_id = if unknown {
        ids.member_id(&args.client_id)
    } else {
        args.member_id.clone()
    };
    let static_holder = args
        .group_instance_id
        .as_ref()
        .and_then(|i| group.instances.get(i))
        .cloned();
    let is_new = static_holder.is_none() && !group.members.contains_key(&member_id);
    if is_new && group.members.len() >= cfg.max_size {
        return Err(GroupError::GroupMaxSizeReached {
            max_size: cfg.max_size,
        });
    }
    if !supports(group, &args.protocol_type, &args.protocols) {
        return Err(GroupError::InconsistentGroupProtocol);
    }
    if unknown && args.group_instance_id.is_none() && args.require_known_member_id {
        return Err(GroupError::MemberIdRequired { member_id });
    }
    // A static member joining with an unknown id takes over the instance's
    // member (the classic protocol's static replacement); a known id other
    // than the holder's is fenced.
    let replaces = match &static_holder {
        Some(holder) if *holder != member_id => {
            if !unknown {
                return Err(GroupError::FencedInstanceId {
                    group_instance_id: args.group_instance_id.clone(),
                });
            }
            Some(holder.clone())
        }
        _ => None,
    };
    let sub = args
        .protocols
        .first()
        .and_then(|(_, md)| parse_subscription(md))
        .ok_or(GroupError::InconsistentGroupProtocol)?;

    let before = group.admit(gid, &member_id, replaces.as_deref(), is_new, records);
    let mut meta = before.meta.clone();
    if args.group_instance_id.is_some() {
        meta.instance_id = args.group_instance_id.clone();
    }
    if sub.rack.is_some() {
        meta.rack_id = sub.rack.clone();
    }
    if args.rebalance_timeout_ms != -1 {
        meta.rebalance_timeout_ms = args.rebalance_timeout_ms;
    }
    let mut names = sub.topics.clone();
    names.sort();
    names.dedup();
    meta.subscribed_topic_names = names;
    meta.subscribed_topic_regex = None;
    meta.client_id = args.client_id.clone();
    meta.client_host = args.client_host.clone();
    meta.classic_member_metadata = Some(ClassicMemberMetadata {
        session_timeout_ms: args.session_timeout_ms,
        supported_protocols: args.protocols.clone(),
    });
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

    // Reconcile from what the member says it owns (nothing for the eager
    // protocol, its partitions for the cooperative one).
    let owned = by_id(&sub.owned, topics);
    let force = replaces.is_some() || is_new;
    let Some((_, next)) = group.reconcile_member(
        gid,
        &member_id,
        Some(&owned),
        topics,
        args.session_timeout_ms,
        force,
        now,
        out,
        records,
    ) else {
        return Err(GroupError::unknown_member(&member_id));
    };
    let generation_id = next.epoch;
    let protocol_name = args
        .protocols
        .first()
        .map(|(n, _)| n.clone())
        .unwrap_or_default();
    Ok(JoinArgsed {
        member_id,
        generation_id,
        protocol_name,
    })
}

/// Kafka's `ConsumerGroup.supportsClassicProtocols`: the `consumer`
/// protocol type, and a protocol every classic member of the group
/// supports (any, when none is classic).
fn supports(group: &Group, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
    if protocol_type != CONSUMER_PROTOCOL_TYPE || protocols.is_empty() {
        return false;
    }
    let mut common: Option<BTreeSet<&str>> = None;
    for m in group.members.values() {
        if let Some(c) = &m.meta.classic_member_metadata {
            let names: BTreeSet<&str> = c
                .supported_protocols
                .iter()
                .map(|(n, _)| n.as_str())
                .collect();
            common = Some(match common {
                None => names,
                Some(prev) => prev.intersection(&names).copied().collect(),
            });
        }
    }
    match common {
        None => true,
        Some(c) => protocols.iter().any(|(n, _)| c.contains(n.as_str())),
    }
}
