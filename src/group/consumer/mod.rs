//! The consumer group protocol of Kafka 4 (KIP-848) as a pure state
//! machine, beside the classic protocol (`group::membership`): members
//! heartbeat (ConsumerGroupHeartbeat) with their subscription and the
//! partitions they own; the coordinator keeps a group epoch, computes the
//! target assignment with a server assignor (`uniform`, `range`) and
//! reconciles each member towards it, revoking before it assigns, so no
//! partition is owned by two members at once.
//!
//! Like the classic core, every call takes the request and `now` (ms since
//! the epoch) and gives its answer; records to append to
//! `__consumer_offsets` ([`records::ConsumerRecord`], Kafka's key versions
//! 3–8 and 16) are returned for the glue to write *before* it answers, and
//! timers are queued as `membership::Effect::Timer`. No I/O, no clock.
//!
//! Stages: `assignor` (target assignments), `reconcile` (Kafka's
//! CurrentAssignmentBuilder: a member's next state from its current one and
//! the target), `group` (one group: epochs, members, targets, who holds
//! which partition, the records of each change), `heartbeat`
//! (ConsumerGroupHeartbeat), `replay` (loading), `records` (the persisted
//! form and its encoding), this file (the API: deadlines, commit checks,
//! describe, metadata changes).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use uuid::Uuid;

use super::error::GroupError;
use super::membership::Effect;
use super::state::MemberIdSource;

pub mod admin;
mod assignor;
pub mod classic;
#[cfg(test)]
mod classic_tests;
pub mod embedded;
mod group;
mod heartbeat;
mod member;
mod reconcile;
pub mod records;
mod replay;
#[cfg(test)]
mod table_tests;
#[cfg(test)]
mod tests;

/// A topic partition set keyed by topic id: `topic id → partitions`.
pub type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// A topic as the metadata image has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    /// Topic id (KIP-516).
    pub id: Uuid,
    /// Topic name.
    pub name: String,
    /// Partition count.
    pub partitions: i32,
}

/// The topics of the metadata image, as the state machine reads them
/// (the glue implements it over the shard's image; tests over a map).
pub trait TopicsView {
    /// The topic named `name`, if it exists.
    fn by_name(&self, name: &str) -> Option<TopicInfo>;
    /// The topic with id `id`, if it exists.
    fn by_id(&self, id: Uuid) -> Option<TopicInfo>;
    /// Every topic name (for regex subscriptions), internal topics excluded.
    fn names(&self) -> Vec<String>;
    /// The metadata image's version (its metadata log offset), recorded
    /// with a resolved regex (record 16); 0 when unknown.
    fn version(&self) -> i64 {
        0
    }
}

/// The broker's `group.consumer.*` settings (Kafka 4.4's defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerGroupConfig {
    /// `group.consumer.heartbeat.interval.ms` (5000): given to members.
    pub heartbeat_interval_ms: i32,
    /// `group.consumer.session.timeout.ms` (45000): a member not heard
    /// from for this long is fenced (removed, the group epoch bumped).
    pub session_timeout_ms: i32,
    /// `group.consumer.assignors` (`uniform`, `range`): the first is the
    /// default; a member naming another gets UNSUPPORTED_ASSIGNOR.
    pub assignors: Vec<String>,
    /// `group.consumer.max.size` (Integer.MAX_VALUE): a join beyond it gets
    /// GROUP_MAX_SIZE_REACHED.
    pub max_size: usize,
    /// `group.consumer.assignment.interval.ms` (1000, KIP-1263): after a
    /// group epoch bump the target assignment is computed by the first
    /// heartbeat at least this long after the previous one (the group is
    /// Assigning meanwhile); 0 computes it at once.
    pub assignment_interval_ms: i64,
}

impl Default for ConsumerGroupConfig {
    fn default() -> ConsumerGroupConfig {
        ConsumerGroupConfig {
            heartbeat_interval_ms: 5000,
            session_timeout_ms: 45000,
            assignors: vec!["uniform".to_string(), "range".to_string()],
            max_size: i32::MAX as usize,
            assignment_interval_ms: 1000,
        }
    }
}

/// A ConsumerGroupHeartbeat (v0–1), as the state machine needs it. `None`
/// fields mean "unchanged since the last heartbeat" (the request's null).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HeartbeatArgs {
    /// Group id.
    pub group_id: String,
    /// Member id: v1 clients make it (a UUID) before joining; v0 clients
    /// send it empty on join and the coordinator names the member.
    pub member_id: String,
    /// 0 joins, -1 leaves, -2 is a static member's temporary leave; any
    /// other value must match the member's epoch (FENCED_MEMBER_EPOCH).
    pub member_epoch: i32,
    /// Static membership (`group.instance.id`).
    pub instance_id: Option<String>,
    /// Rack id.
    pub rack_id: Option<String>,
    /// Rebalance timeout (ms); -1 unchanged. Required on join.
    pub rebalance_timeout_ms: i32,
    /// Subscribed topic names.
    pub subscribed_topic_names: Option<Vec<String>>,
    /// Subscribed topic regex (v1, RE2 syntax).
    pub subscribed_topic_regex: Option<String>,
    /// Server assignor name; None keeps the member's (or the default).
    pub server_assignor: Option<String>,
    /// The partitions the member owns now (topic id, partitions).
    pub owned: Option<Vec<(Uuid, Vec<i32>)>>,
    /// Client id (request header).
    pub client_id: String,
    /// Client address (`/ip`).
    pub client_host: String,
    /// Request version.
    pub version: i16,
}

/// A successful heartbeat's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatAnswer {
    /// The member's id (made by the coordinator for a v0 join).
    pub member_id: String,
    /// The member's epoch after this heartbeat (-1 after a leave, -2 after
    /// a static member's temporary leave).
    pub member_epoch: i32,
    /// `group.consumer.heartbeat.interval.ms`.
    pub heartbeat_interval_ms: i32,
    /// The member's assignment, sent when it changed or the request was a
    /// full one (join, or `owned` given and different); None otherwise.
    pub assignment: Option<Assignment>,
}

/// What a heartbeat gives: the answer (or error and message) and the
/// records to append before answering.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatOutcome {
    /// The answer, or the error with Kafka's message.
    pub result: Result<HeartbeatAnswer, (GroupError, Option<String>)>,
    /// Records for `__consumer_offsets`, in order.
    pub records: Vec<records::ConsumerRecord>,
}

/// A consumer group's state as ConsumerGroupDescribe and ListGroups show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerGroupState {
    /// No members.
    Empty,
    /// Group epoch ahead of the target assignment's epoch.
    Assigning,
    /// Some member is not yet at the target.
    Reconciling,
    /// Every member at the target.
    Stable,
    /// Removed.
    Dead,
}

impl ConsumerGroupState {
    /// Kafka's name on the wire.
    pub fn as_str(&self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
            ConsumerGroupState::Dead => "Dead",
        }
    }
}

/// One member as ConsumerGroupDescribe shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct DescribedMember {
    /// Member id.
    pub member_id: String,
    /// Static instance id.
    pub instance_id: Option<String>,
    /// Rack id.
    pub rack_id: Option<String>,
    /// Member epoch.
    pub member_epoch: i32,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Subscribed topic names.
    pub subscribed_topic_names: Vec<String>,
    /// Subscribed regex.
    pub subscribed_topic_regex: Option<String>,
    /// Current assignment.
    pub assignment: Assignment,
    /// Target assignment.
    pub target_assignment: Assignment,
    /// Whether the member speaks the classic protocol (inside a consumer
    /// group after an online upgrade).
    pub classic: bool,
}

/// A consumer group as ConsumerGroupDescribe shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct DescribedGroup {
    /// State.
    pub state: ConsumerGroupState,
    /// Group epoch.
    pub group_epoch: i32,
    /// Target assignment epoch.
    pub assignment_epoch: i32,
    /// The assignor used for the target assignment.
    pub assignor_name: String,
    /// Members.
    pub members: Vec<DescribedMember>,
}

/// Every consumer group of one coordinator (shard).
#[derive(Debug, Default)]
pub struct ConsumerGroups {
    /// Groups by id.
    groups: HashMap<String, group::Group>,
}

impl ConsumerGroups {
    /// Whether no consumer group is held here.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Whether the consumer group `group_id` has members (false for no
    /// such group).
    pub fn has_members(&self, group_id: &str) -> bool {
        self.groups
            .get(group_id)
            .is_some_and(|g| !g.members.is_empty())
    }

    /// Whether `group_id` is a consumer group here.
    pub fn contains(&self, group_id: &str) -> bool {
        self.groups.contains_key(group_id)
    }

    /// A ConsumerGroupHeartbeat. Validation as Kafka 4.4
    /// (`throwIfConsumerGroupHeartbeatRequestIsInvalid`): INVALID_REQUEST
    /// for a missing member id (v1) / rebalance timeout / subscription on
    /// join, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, UNSUPPORTED_ASSIGNOR,
    /// GROUP_MAX_SIZE_REACHED, UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID.
    /// Timers (session, rebalance) are pushed to `out` as `Effect::Timer`.
    pub fn heartbeat(
        &mut self,
        cfg: &ConsumerGroupConfig,
        args: HeartbeatArgs,
        topics: &dyn TopicsView,
        ids: &mut MemberIdSource,
        now: i64,
        out: &mut Vec<Effect>,
    ) -> HeartbeatOutcome {
        let mut records = Vec::new();
        let mut effects = Vec::new();
        let result = heartbeat::heartbeat(
            &mut self.groups,
            cfg,
            args,
            topics,
            ids,
            now,
            &mut effects,
            &mut records,
        );
        if result.is_err() {
            records.clear();
        } else {
            out.append(&mut effects);
        }
        HeartbeatOutcome { result, records }
    }

    /// A deadline armed by an `Effect::Timer` for `group_id` came: members
    /// whose session expired, or who did not revoke within their rebalance
    /// timeout, are fenced. Gives the records to append.
    pub fn on_deadline(
        &mut self,
        cfg: &ConsumerGroupConfig,
        group_id: &str,
        topics: &dyn TopicsView,
        now: i64,
        _out: &mut Vec<Effect>,
    ) -> Vec<records::ConsumerRecord> {
        let mut records = Vec::new();
        let Some(group) = self.groups.get_mut(group_id) else {
            return records;
        };
        group.configure(cfg);
        let expired: Vec<String> = group
            .members
            .iter()
            .filter(|(_, m)| {
                m.session_deadline.is_some_and(|d| d <= now)
                    || (m.current.state == reconcile::MemberState::UnrevokedPartitions
                        && m.rebalance_deadline.is_some_and(|d| d <= now))
            })
            .map(|(id, _)| id.clone())
            .collect();
        if expired.is_empty() {
            return records;
        }
        for member_id in &expired {
            group.remove_member(group_id, member_id, &mut records);
        }
        group.bump(group_id, topics, now, &mut records);
        records
    }

    /// Checks an OffsetCommit (v9+) or TxnOffsetCommit by `member_id` at
    /// `member_epoch` for a partition of topic `topic_id`: UNKNOWN_MEMBER_ID,
    /// STALE_MEMBER_EPOCH (epoch older than the member's, KIP-1251: unless
    /// the partition was assigned at or before it), FENCED_MEMBER_EPOCH
    /// (newer than the member's); GROUP_ID_NOT_FOUND for no such group.
    pub fn check_commit(
        &self,
        group_id: &str,
        member_id: &str,
        member_epoch: i32,
        topic_id: Option<Uuid>,
        partition: i32,
    ) -> Result<(), GroupError> {
        let group = self
            .groups
            .get(group_id)
            .ok_or(GroupError::GroupIdNotFound)?;
        let member = group
            .members
            .get(member_id)
            .ok_or_else(|| GroupError::unknown_member(member_id))?;
        let expected = member.current.epoch;
        if member_epoch == expected {
            return Ok(());
        }
        if member.meta.classic_member_metadata.is_some() {
            // A classic member commits with its generation (Kafka's
            // ConsumerGroup.validateOffsetCommit for classic members).
            return Err(GroupError::IllegalGeneration {
                generation: member_epoch,
                current: expected,
            });
        }
        if member_epoch > expected {
            return Err(GroupError::FencedMemberEpoch {
                member_id: member_id.to_string(),
                epoch: member_epoch,
                expected,
            });
        }
        // KIP-1251: assignment epoch ≤ the commit's epoch < the member's.
        let assigned_at = topic_id
            .and_then(|t| member.current.assigned.get(&t))
            .and_then(|ps| ps.get(&partition));
        match assigned_at {
            Some(at) if *at <= member_epoch => Ok(()),
            _ => Err(GroupError::StaleMemberEpoch {
                member_id: member_id.to_string(),
                epoch: member_epoch,
                expected,
            }),
        }
    }

    /// The group as ConsumerGroupDescribe shows it; None when not a
    /// consumer group here.
    pub fn describe(&self, group_id: &str) -> Option<DescribedGroup> {
        let group = self.groups.get(group_id)?;
        let members = group
            .members
            .iter()
            .map(|(id, m)| DescribedMember {
                member_id: id.clone(),
                instance_id: m.meta.instance_id.clone(),
                rack_id: m.meta.rack_id.clone(),
                member_epoch: m.current.epoch,
                client_id: m.meta.client_id.clone(),
                client_host: m.meta.client_host.clone(),
                subscribed_topic_names: m.meta.subscribed_topic_names.clone(),
                subscribed_topic_regex: m.meta.subscribed_topic_regex.clone(),
                assignment: group::assigned_plain(&m.current),
                target_assignment: group.targets.get(id).cloned().unwrap_or_default(),
                classic: m.meta.classic_member_metadata.is_some(),
            })
            .collect();
        Some(DescribedGroup {
            state: group.state(),
            group_epoch: group.epoch,
            assignment_epoch: group.assignment_epoch,
            assignor_name: group.assignor_name(),
            members,
        })
    }

    /// (group id, state) of every consumer group (ListGroups), by group id.
    pub fn list(&self) -> Vec<(String, ConsumerGroupState)> {
        let mut all: Vec<(String, ConsumerGroupState)> = self
            .groups
            .iter()
            .map(|(id, g)| (id.clone(), g.state()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Topics were created, deleted or grew in the metadata image: every
    /// group subscribed to a changed topic bumps its epoch (the regexes are
    /// resolved again). Gives the records to append.
    pub fn topics_changed(
        &mut self,
        topics: &dyn TopicsView,
        now: i64,
        _out: &mut Vec<Effect>,
    ) -> Vec<records::ConsumerRecord> {
        let mut records = Vec::new();
        let mut ids: Vec<&String> = self.groups.keys().collect();
        ids.sort();
        let ids: Vec<String> = ids.into_iter().cloned().collect();
        for id in ids {
            if let Some(group) = self.groups.get_mut(&id) {
                if group.members.is_empty() {
                    continue;
                }
                let (_, _, hash) = group.subscriptions(topics);
                if hash != group.metadata_hash {
                    group.bump(&id, topics, now, &mut records);
                }
            }
        }
        records
    }

    /// Replays one record read from `__consumer_offsets` (loading a
    /// partition); tombstones remove.
    pub fn replay(&mut self, record: records::ConsumerRecord) {
        replay::replay(&mut self.groups, record);
    }

    /// After a load: arms the session timers of the members found (each
    /// expires unless its consumer heartbeats).
    pub fn arm_after_load(&mut self, cfg: &ConsumerGroupConfig, now: i64, out: &mut Vec<Effect>) {
        replay::arm_after_load(&mut self.groups, &|_| cfg.clone(), now, out);
    }

    /// Forgets every group `keep` says no (the partition was resigned).
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.groups.retain(|id, _| keep(id));
    }

    /// Takes the groups of `loaded` (a partition just loaded) in.
    pub fn absorb(&mut self, loaded: ConsumerGroups) {
        self.groups.extend(loaded.groups);
    }
}
