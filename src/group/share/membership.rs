//! Share group membership (KIP-932, ShareGroupHeartbeat) as a pure state
//! machine: members join with epoch 0 and their subscribed topic names,
//! heartbeat at their epoch, leave with -1; the group epoch is bumped on
//! every membership or subscription change (and when a subscribed topic is
//! created, deleted or grows), the `simple` assignor computes the target,
//! and a member takes its target at once: a share-partition is read by many
//! members, so there is nothing to revoke first. Members silent for the
//! session timeout are fenced. Each call gives the records to append
//! (keys 10–14 of `__consumer_offsets`, [`super::records`]), which
//! [`ShareGroups::replay`] reads back when the partition loads.
//!
//! Epochs as Kafka 4.4 gives them: a new group starts at epoch 1 with an
//! empty target, so its first member's epoch is 2.

use std::collections::{BTreeMap, BTreeSet};

use super::assignor::{self, Assignment};
use super::state_topics::StateTopics;
use crate::group::consumer::TopicsView;
use crate::group::error::GroupError;

/// The broker's `group.share.*` settings (Kafka 4.4's defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct ShareGroupConfig {
    /// `group.share.heartbeat.interval.ms` (5000).
    pub heartbeat_interval_ms: i32,
    /// `group.share.session.timeout.ms` (45000).
    pub session_timeout_ms: i32,
    /// `group.share.max.size` (200): a join beyond it gets
    /// GROUP_MAX_SIZE_REACHED.
    pub max_size: usize,
}

impl Default for ShareGroupConfig {
    fn default() -> ShareGroupConfig {
        ShareGroupConfig {
            heartbeat_interval_ms: 5000,
            session_timeout_ms: 45000,
            max_size: 200,
        }
    }
}

/// A ShareGroupHeartbeat (v1). `None` fields mean "unchanged".
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShareHeartbeatArgs {
    /// Group id.
    pub group_id: String,
    /// Member id (the client makes it, a UUID).
    pub member_id: String,
    /// 0 joins, -1 leaves, otherwise the member's epoch.
    pub member_epoch: i32,
    /// Rack id.
    pub rack_id: Option<String>,
    /// Subscribed topic names (required on join).
    pub subscribed_topic_names: Option<Vec<String>>,
    /// Client id (request header).
    pub client_id: String,
    /// Client address (`/ip`).
    pub client_host: String,
}

/// A successful heartbeat's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareHeartbeatAnswer {
    /// Member id.
    pub member_id: String,
    /// The member's epoch now (-1 after a leave).
    pub member_epoch: i32,
    /// `group.share.heartbeat.interval.ms`.
    pub heartbeat_interval_ms: i32,
    /// The member's partitions, when they changed or on a join.
    pub assignment: Option<Assignment>,
}

pub use super::records::ShareGroupRecord;
use super::records::ShareMemberMetadata;

/// Each member's epoch and partitions, by member id.
pub type MemberEpochs = BTreeMap<String, (i32, Assignment)>;

/// A share group's state (ShareGroupDescribe / ListGroups).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareGroupState {
    /// No members.
    Empty,
    /// Members.
    Stable,
}

#[derive(Debug, Clone, Default)]
struct Member {
    epoch: i32,
    previous_epoch: i32,
    rack_id: Option<String>,
    client_id: String,
    client_host: String,
    topics: Vec<String>,
    assigned: Assignment,
    session_deadline: i64,
}

#[derive(Debug, Clone, Default)]
struct Group {
    /// Kafka's fresh group is at epoch 1 with an empty target.
    epoch: i32,
    assignment_epoch: i32,
    members: BTreeMap<String, Member>,
    targets: BTreeMap<String, Assignment>,
    /// (topic name, id, partitions) of the subscribed topics at the last
    /// bump: a change bumps the epoch.
    topics_seen: BTreeSet<(String, uuid::Uuid, i32)>,
    /// Loaded from the log: the topics are taken as seen at the next
    /// heartbeat, without a bump.
    reseed: bool,
    /// The share-partitions with state (record 15's initialized topics).
    state_topics: StateTopics,
}

impl Group {
    fn fresh() -> Group {
        Group {
            epoch: 1,
            assignment_epoch: 1,
            ..Group::default()
        }
    }
}

/// Every share group of one coordinator.
#[derive(Debug, Default)]
pub struct ShareGroups {
    groups: BTreeMap<String, Group>,
}

fn invalid(msg: &str) -> GroupError {
    GroupError::InvalidRequest(msg.to_string())
}

/// Kafka's checks of a ShareGroupHeartbeat.
fn validate(args: &ShareHeartbeatArgs) -> Result<(), GroupError> {
    if args.group_id.is_empty() {
        return Err(invalid("GroupId can't be empty."));
    }
    if args.member_id.is_empty() {
        return Err(invalid("MemberId can't be empty."));
    }
    if args.rack_id.as_deref() == Some("") {
        return Err(invalid("RackId can't be empty."));
    }
    if args.member_epoch < -1 {
        return Err(invalid("MemberEpoch is invalid."));
    }
    if args.member_epoch == 0
        && args
            .subscribed_topic_names
            .as_ref()
            .is_none_or(|t| t.is_empty())
    {
        return Err(invalid(
            "SubscribedTopicNames must be set in first request.",
        ));
    }
    Ok(())
}

impl Group {
    /// The subscribed topics as the image has them.
    fn seen(&self, topics: &dyn TopicsView) -> BTreeSet<(String, uuid::Uuid, i32)> {
        self.members
            .values()
            .flat_map(|m| m.topics.iter())
            .filter_map(|name| topics.by_name(name))
            .map(|t| (t.name, t.id, t.partitions))
            .collect()
    }

    /// Bumps the epoch and computes the target (records 11, 13 for changed
    /// targets, 12).
    fn bump(&mut self, gid: &str, topics: &dyn TopicsView, records: &mut Vec<ShareGroupRecord>) {
        self.epoch += 1;
        crate::metrics::coordinator::count(crate::metrics::coordinator::Event::ShareRebalance);
        records.push(ShareGroupRecord::GroupMetadata {
            group_id: gid.to_string(),
            epoch: Some(self.epoch),
        });
        self.topics_seen = self.seen(topics);
        let subs: BTreeMap<String, BTreeSet<uuid::Uuid>> = self
            .members
            .iter()
            .map(|(id, m)| {
                let ids = m
                    .topics
                    .iter()
                    .filter_map(|n| topics.by_name(n))
                    .map(|t| t.id)
                    .collect();
                (id.clone(), ids)
            })
            .collect();
        let partitions: BTreeMap<uuid::Uuid, i32> = self
            .topics_seen
            .iter()
            .map(|(_, id, n)| (*id, *n))
            .collect();
        let targets = assignor::assign(&subs, &partitions, &self.targets);
        for (member, target) in &targets {
            if self.targets.get(member) != Some(target) {
                records.push(ShareGroupRecord::TargetAssignmentMember {
                    group_id: gid.to_string(),
                    member_id: member.clone(),
                    target: Some(target.clone()),
                });
            }
        }
        self.targets = targets;
        self.assignment_epoch = self.epoch;
        let mut grew = false;
        for (name, id, n) in &self.topics_seen {
            grew |= self.state_topics.add_all(*id, name, *n);
        }
        if grew {
            records.push(ShareGroupRecord::StatePartitionMetadata {
                group_id: gid.to_string(),
                value: Some(self.state_topics.to_record()),
            });
        }
        records.push(ShareGroupRecord::TargetAssignmentMetadata {
            group_id: gid.to_string(),
            epoch: Some(self.epoch),
        });
    }

    fn remove(&mut self, gid: &str, member_id: &str, records: &mut Vec<ShareGroupRecord>) {
        self.members.remove(member_id);
        self.targets.remove(member_id);
        for r in [
            ShareGroupRecord::CurrentMemberAssignment {
                group_id: gid.to_string(),
                member_id: member_id.to_string(),
                current: None,
            },
            ShareGroupRecord::TargetAssignmentMember {
                group_id: gid.to_string(),
                member_id: member_id.to_string(),
                target: None,
            },
            ShareGroupRecord::MemberMetadata {
                group_id: gid.to_string(),
                member_id: member_id.to_string(),
                value: None,
            },
        ] {
            records.push(r);
        }
    }
}

impl ShareGroups {
    /// A ShareGroupHeartbeat. Errors: INVALID_REQUEST (Kafka's texts),
    /// UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED.
    /// Gives the answer and the records to append before answering.
    pub fn heartbeat(
        &mut self,
        cfg: &ShareGroupConfig,
        args: &ShareHeartbeatArgs,
        topics: &dyn TopicsView,
        now: i64,
    ) -> (
        Result<ShareHeartbeatAnswer, GroupError>,
        Vec<ShareGroupRecord>,
    ) {
        let mut records = Vec::new();
        let result = self.beat(cfg, args, topics, now, &mut records);
        if result.is_err() {
            records.clear();
        }
        (result, records)
    }

    fn beat(
        &mut self,
        cfg: &ShareGroupConfig,
        args: &ShareHeartbeatArgs,
        topics: &dyn TopicsView,
        now: i64,
        records: &mut Vec<ShareGroupRecord>,
    ) -> Result<ShareHeartbeatAnswer, GroupError> {
        validate(args)?;
        let gid = &args.group_id;
        let id = &args.member_id;
        // Kafka 4.4's order: the group must exist unless the member joins
        // (GROUP_ID_NOT_FOUND), a full group refuses any member it does
        // not hold (GROUP_MAX_SIZE_REACHED, even an unknown one), then the
        // member must be known.
        if args.member_epoch != 0 && !self.groups.contains_key(gid) {
            return Err(GroupError::GroupIdNotFound);
        }
        if args.member_epoch == -1 {
            let group = self
                .groups
                .get_mut(gid)
                .filter(|g| g.members.contains_key(id))
                .ok_or_else(|| GroupError::unknown_member(id))?;
            group.remove(gid, id, records);
            group.bump(gid, topics, records);
            return Ok(ShareHeartbeatAnswer {
                member_id: id.clone(),
                member_epoch: -1,
                heartbeat_interval_ms: cfg.heartbeat_interval_ms,
                assignment: None,
            });
        }
        let joining = args.member_epoch == 0;
        if let Some(g) = self.groups.get(gid) {
            if !g.members.contains_key(id) && g.members.len() >= cfg.max_size {
                return Err(GroupError::GroupMaxSizeReached {
                    max_size: cfg.max_size,
                });
            }
        }
        if !joining {
            let m = self
                .groups
                .get(gid)
                .and_then(|g| g.members.get(id))
                .ok_or_else(|| GroupError::unknown_member(id))?;
            if args.member_epoch != m.epoch && args.member_epoch != m.previous_epoch {
                return Err(GroupError::FencedMemberEpoch {
                    member_id: id.clone(),
                    epoch: args.member_epoch,
                    expected: m.epoch,
                });
            }
        }
        let group = self.groups.entry(gid.clone()).or_insert_with(Group::fresh);
        let is_new = !group.members.contains_key(id);
        if is_new && group.members.len() >= cfg.max_size {
            if group.members.is_empty() {
                self.groups.remove(gid);
            }
            return Err(GroupError::GroupMaxSizeReached {
                max_size: cfg.max_size,
            });
        }
        let before = group.members.get(id).cloned().unwrap_or_default();
        let mut m = before.clone();
        if let Some(names) = &args.subscribed_topic_names {
            let mut names = names.clone();
            names.sort();
            names.dedup();
            m.topics = names;
        }
        if args.rack_id.is_some() {
            m.rack_id = args.rack_id.clone();
        }
        m.client_id = args.client_id.clone();
        m.client_host = args.client_host.clone();
        m.session_deadline = now + i64::from(cfg.session_timeout_ms);
        let changed = is_new || m.topics != before.topics;
        if changed
            || m.rack_id != before.rack_id
            || m.client_id != before.client_id
            || m.client_host != before.client_host
        {
            records.push(ShareGroupRecord::MemberMetadata {
                group_id: gid.clone(),
                member_id: id.clone(),
                value: Some(ShareMemberMetadata {
                    rack_id: m.rack_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    subscribed_topic_names: m.topics.clone(),
                }),
            });
        }
        group.members.insert(id.clone(), m);
        if group.reseed {
            group.topics_seen = group.seen(topics);
            group.reseed = false;
        }
        if changed || group.seen(topics) != group.topics_seen {
            group.bump(gid, topics, records);
        }
        // A share member takes its target at once.
        let target = group.targets.get(id).cloned().unwrap_or_default();
        let assignment_epoch = group.assignment_epoch;
        let Some(m) = group.members.get_mut(id) else {
            return Err(GroupError::unknown_member(id));
        };
        let partitions_changed = m.assigned != target;
        let moved = m.epoch != assignment_epoch || partitions_changed;
        if moved {
            m.previous_epoch = m.epoch;
            m.epoch = assignment_epoch;
            m.assigned = target.clone();
            records.push(ShareGroupRecord::CurrentMemberAssignment {
                group_id: gid.clone(),
                member_id: id.clone(),
                current: Some((m.epoch, m.previous_epoch, target.clone())),
            });
        }
        Ok(ShareHeartbeatAnswer {
            member_id: id.clone(),
            member_epoch: m.epoch,
            heartbeat_interval_ms: cfg.heartbeat_interval_ms,
            // Sent on a join, on a full request (one with its topic names)
            // and when the partitions changed, not for an epoch alone, as
            // Kafka 4.4 answers.
            assignment: (joining || args.subscribed_topic_names.is_some() || partitions_changed)
                .then_some(target),
        })
    }

    /// Fences every member of `group_id` whose session ended by `now`.
    /// Gives the fenced member ids and the records.
    pub fn on_deadline(
        &mut self,
        group_id: &str,
        topics: &dyn TopicsView,
        now: i64,
    ) -> (Vec<String>, Vec<ShareGroupRecord>) {
        let mut records = Vec::new();
        let Some(group) = self.groups.get_mut(group_id) else {
            return (Vec::new(), records);
        };
        let expired: Vec<String> = group
            .members
            .iter()
            .filter(|(_, m)| m.session_deadline <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            group.remove(group_id, id, &mut records);
        }
        if !expired.is_empty() {
            group.bump(group_id, topics, &mut records);
        }
        (expired, records)
    }

    /// The group's state, epoch and members (id → epoch, partitions);
    /// None when there is no share group `group_id`.
    pub fn describe(&self, group_id: &str) -> Option<(ShareGroupState, i32, MemberEpochs)> {
        let g = self.groups.get(group_id)?;
        let state = if g.members.is_empty() {
            ShareGroupState::Empty
        } else {
            ShareGroupState::Stable
        };
        let members = g
            .members
            .iter()
            .map(|(id, m)| (id.clone(), (m.epoch, m.assigned.clone())))
            .collect();
        Some((state, g.epoch, members))
    }
}

/// One member as ShareGroupDescribe shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct DescribedShareMember {
    /// Member id.
    pub member_id: String,
    /// Rack id.
    pub rack_id: Option<String>,
    /// Its epoch.
    pub member_epoch: i32,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Subscribed topic names.
    pub subscribed_topic_names: Vec<String>,
    /// Its partitions.
    pub assignment: Assignment,
}

/// A share group as ShareGroupDescribe shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct DescribedShareGroup {
    /// Empty or Stable.
    pub state: ShareGroupState,
    /// Group epoch.
    pub group_epoch: i32,
    /// Target assignment epoch.
    pub assignment_epoch: i32,
    /// Members by id.
    pub members: Vec<DescribedShareMember>,
}

impl ShareGroupState {
    /// Kafka's name of the state (ShareGroupDescribe, ListGroups).
    pub fn as_str(&self) -> &'static str {
        match self {
            ShareGroupState::Empty => "Empty",
            ShareGroupState::Stable => "Stable",
        }
    }
}

impl Group {
    fn state(&self) -> ShareGroupState {
        if self.members.is_empty() {
            ShareGroupState::Empty
        } else {
            ShareGroupState::Stable
        }
    }
}

impl ShareGroups {
    /// Whether `group_id` is a share group here.
    pub fn contains(&self, group_id: &str) -> bool {
        self.groups.contains_key(group_id)
    }

    /// Whether the share group `group_id` has members.
    pub fn has_members(&self, group_id: &str) -> bool {
        self.groups
            .get(group_id)
            .is_some_and(|g| !g.members.is_empty())
    }

    /// Every share group with its state, by id.
    pub fn list(&self) -> Vec<(String, ShareGroupState)> {
        self.groups
            .iter()
            .map(|(id, g)| (id.clone(), g.state()))
            .collect()
    }

    /// ShareGroupDescribe of `group_id`; None when it is no share group.
    pub fn describe_full(&self, group_id: &str) -> Option<DescribedShareGroup> {
        let g = self.groups.get(group_id)?;
        Some(DescribedShareGroup {
            state: g.state(),
            group_epoch: g.epoch,
            assignment_epoch: g.assignment_epoch,
            members: g
                .members
                .iter()
                .map(|(id, m)| DescribedShareMember {
                    member_id: id.clone(),
                    rack_id: m.rack_id.clone(),
                    member_epoch: m.epoch,
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    subscribed_topic_names: m.topics.clone(),
                    assignment: m.assigned.clone(),
                })
                .collect(),
        })
    }

    /// DeleteGroups of the share group `group_id`: the tombstones of its
    /// records (members' targets 13, then 15, 12, 11, as Kafka removes a
    /// share group). GROUP_ID_NOT_FOUND when it is no share group,
    /// NON_EMPTY_GROUP while it has members. The group stays until
    /// [`ShareGroups::forget_empty`].
    pub fn plan_delete(&self, group_id: &str) -> Result<Vec<ShareGroupRecord>, GroupError> {
        let Some(g) = self.groups.get(group_id) else {
            return Err(GroupError::GroupIdNotFound);
        };
        if !g.members.is_empty() {
            return Err(GroupError::NonEmptyGroup);
        }
        let gid = group_id.to_string();
        let mut out = Vec::new();
        for member_id in g.targets.keys() {
            out.push(ShareGroupRecord::TargetAssignmentMember {
                group_id: gid.clone(),
                member_id: member_id.clone(),
                target: None,
            });
        }
        out.push(ShareGroupRecord::StatePartitionMetadata {
            group_id: gid.clone(),
            value: None,
        });
        out.push(ShareGroupRecord::TargetAssignmentMetadata {
            group_id: gid.clone(),
            epoch: None,
        });
        out.push(ShareGroupRecord::GroupMetadata {
            group_id: gid,
            epoch: None,
        });
        Ok(out)
    }

    /// Removes the share group `group_id` if it has no members (its
    /// tombstones were appended).
    pub fn forget_empty(&mut self, group_id: &str) {
        if self
            .groups
            .get(group_id)
            .is_some_and(|g| g.members.is_empty())
        {
            self.groups.remove(group_id);
        }
    }

    /// Applies one record read from `__consumer_offsets` (a load). The
    /// group's subscribed topics are taken as seen at its next heartbeat.
    pub fn replay(&mut self, record: ShareGroupRecord) {
        match record {
            ShareGroupRecord::GroupMetadata {
                group_id,
                epoch: None,
            } => {
                self.groups.remove(&group_id);
            }
            ShareGroupRecord::GroupMetadata {
                group_id,
                epoch: Some(e),
            } => self.loaded(&group_id).epoch = e,
            ShareGroupRecord::TargetAssignmentMetadata { group_id, epoch } => {
                if let Some(e) = epoch {
                    self.loaded(&group_id).assignment_epoch = e;
                }
            }
            ShareGroupRecord::MemberMetadata {
                group_id,
                member_id,
                value,
            } => match value {
                None => {
                    if let Some(g) = self.groups.get_mut(&group_id) {
                        g.members.remove(&member_id);
                    }
                }
                Some(v) => {
                    let m = self.loaded(&group_id).members.entry(member_id).or_default();
                    m.rack_id = v.rack_id;
                    m.client_id = v.client_id;
                    m.client_host = v.client_host;
                    m.topics = v.subscribed_topic_names;
                }
            },
            ShareGroupRecord::TargetAssignmentMember {
                group_id,
                member_id,
                target,
            } => match target {
                None => {
                    if let Some(g) = self.groups.get_mut(&group_id) {
                        g.targets.remove(&member_id);
                    }
                }
                Some(t) => {
                    self.loaded(&group_id).targets.insert(member_id, t);
                }
            },
            ShareGroupRecord::CurrentMemberAssignment {
                group_id,
                member_id,
                current,
            } => {
                if let Some((epoch, previous, assigned)) = current {
                    let m = self.loaded(&group_id).members.entry(member_id).or_default();
                    m.epoch = epoch;
                    m.previous_epoch = previous;
                    m.assigned = assigned;
                }
            }
            ShareGroupRecord::StatePartitionMetadata { group_id, value } => match value {
                Some(v) => self.loaded(&group_id).state_topics = StateTopics::from_record(&v),
                None => {
                    if let Some(g) = self.groups.get_mut(&group_id) {
                        g.state_topics = StateTopics::default();
                    }
                }
            },
        }
    }

    fn loaded(&mut self, group_id: &str) -> &mut Group {
        self.groups
            .entry(group_id.to_string())
            .or_insert_with(|| Group {
                reseed: true,
                ..Group::fresh()
            })
    }

    /// After a load: every member found gets a new session, ending at
    /// `now` plus its group's session timeout (`session_timeout_of` by
    /// group id). Gives (group id, deadline) to arm.
    pub fn arm_after_load(
        &mut self,
        session_timeout_of: &dyn Fn(&str) -> i32,
        now: i64,
    ) -> Vec<(String, i64)> {
        let mut out = Vec::new();
        for (id, g) in self.groups.iter_mut() {
            if g.members.is_empty() {
                continue;
            }
            let at = now + i64::from(session_timeout_of(id));
            for m in g.members.values_mut() {
                m.session_deadline = at;
            }
            out.push((id.clone(), at));
        }
        out
    }

    /// The metadata image's topics changed: every share group with members
    /// whose subscribed topics were created, deleted or grew bumps its
    /// epoch and gets a new target (its members take it at their next
    /// heartbeat). Gives the records, groups in id order.
    pub fn topics_changed(&mut self, topics: &dyn TopicsView) -> Vec<ShareGroupRecord> {
        let mut records = Vec::new();
        for (id, g) in self.groups.iter_mut() {
            if g.members.is_empty() || g.reseed {
                continue;
            }
            if g.seen(topics) != g.topics_seen {
                g.bump(id, topics, &mut records);
            }
        }
        records
    }

    /// Keeps only the groups `keep` accepts (a partition unloaded).
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.groups.retain(|id, _| keep(id));
    }

    /// Takes the groups of `loaded` (a partition just loaded) in.
    pub fn absorb(&mut self, loaded: ShareGroups) {
        self.groups.extend(loaded.groups);
    }

    /// The share-partitions `group_id` has state for (record 15's
    /// initialized topics): (topic id, name, partitions). None when it is
    /// no share group.
    pub fn state_topics(&self, group_id: &str) -> Option<Vec<(uuid::Uuid, String, Vec<i32>)>> {
        self.groups.get(group_id).map(|g| g.state_topics.list())
    }

    /// AlterShareGroupOffsets / DeleteShareGroupOffsets of `group_id`: the
    /// group must be empty (NON_EMPTY_GROUP); with `create` a missing share
    /// group is created empty (its records 11 and 14, as Kafka 4.4 creates
    /// one on an alter), else GROUP_ID_NOT_FOUND. `change` edits its
    /// share-partitions with state; gives the records (record 15 when the
    /// set changed).
    pub fn change_state_topics(
        &mut self,
        group_id: &str,
        create: bool,
        change: impl FnOnce(&mut StateTopics),
    ) -> Result<Vec<ShareGroupRecord>, GroupError> {
        let mut records = Vec::new();
        if !self.groups.contains_key(group_id) {
            if !create {
                return Err(GroupError::GroupIdNotFound);
            }
            let g = Group::fresh();
            records.push(ShareGroupRecord::GroupMetadata {
                group_id: group_id.to_string(),
                epoch: Some(g.epoch),
            });
            records.push(ShareGroupRecord::TargetAssignmentMetadata {
                group_id: group_id.to_string(),
                epoch: Some(g.assignment_epoch),
            });
            self.groups.insert(group_id.to_string(), g);
        }
        let Some(g) = self.groups.get_mut(group_id) else {
            return Err(GroupError::GroupIdNotFound);
        };
        if !g.members.is_empty() {
            return Err(GroupError::NonEmptyGroup);
        }
        let before = g.state_topics.clone();
        change(&mut g.state_topics);
        if g.state_topics != before {
            records.push(ShareGroupRecord::StatePartitionMetadata {
                group_id: group_id.to_string(),
                value: Some(g.state_topics.to_record()),
            });
        }
        Ok(records)
    }

    /// Whether any share group is held here.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }
}

#[cfg(test)]
mod tests;
