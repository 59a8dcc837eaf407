//! The admin views of the coordinator's core: DescribeGroups, ListGroups
//! and DeleteGroups, answered per group state as Kafka answers them. Pure, as
//! the rest of the core.

use bytes::Bytes;

use super::consumer::admin::TakenGroup;
use super::consumer::records::ConsumerRecord;
use super::error::GroupError;
use super::membership::{GroupCore, OffsetsTopicRecord};
use super::records;
use super::state::GroupState;
use super::{DescribedMember, GroupDescription, ListedGroup};

impl GroupCore {
    /// DescribeGroups for one group; an unknown group, or a consumer group
    /// (KIP-848, flagged `consumer_group`), is described as Dead.
    pub fn describe(&self, group_id: &str) -> GroupDescription {
        let Some(grp) = self.groups.get(group_id) else {
            return GroupDescription {
                group_id: group_id.to_string(),
                state: GroupState::Dead.as_str().into(),
                consumer_group: self.consumer.contains(group_id) || self.share.contains(group_id),
                ..Default::default()
            };
        };
        let protocol = grp.protocol_name.clone().unwrap_or_default();
        // As Kafka's DescribeGroups: the protocol, the members' metadata and
        // their assignments only in Stable; a Dead group lists no members.
        let stable = match grp.state {
            GroupState::Stable => true,
            GroupState::Empty
            | GroupState::PreparingRebalance
            | GroupState::CompletingRebalance
            | GroupState::Dead => false,
        };
        let members = if grp.state == GroupState::Dead {
            Vec::new()
        } else {
            grp.members
                .values()
                .map(|m| DescribedMember {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    metadata: if stable {
                        m.metadata_for(&protocol)
                    } else {
                        Bytes::new()
                    },
                    assignment: if stable {
                        m.assignment.clone()
                    } else {
                        Bytes::new()
                    },
                })
                .collect()
        };
        GroupDescription {
            group_id: group_id.to_string(),
            state: grp.state.as_str().to_string(),
            protocol_type: grp.protocol_type.clone().unwrap_or_default(),
            protocol: if stable { protocol } else { String::new() },
            members,
            consumer_group: false,
        }
    }

    /// ListGroups: groups that are not Dead, filtered by state names
    /// (case-insensitive, KIP-518) and protocol types (KIP-848's types
    /// filter; every group here is "classic"), sorted by id.
    pub fn list(&self, states: &[String], types: &[String]) -> Vec<ListedGroup> {
        let mut out: Vec<ListedGroup> = self
            .groups
            .values()
            .filter_map(|g| {
                let state = g.state.as_str();
                if g.state == GroupState::Dead {
                    return None;
                }
                if !states.is_empty() && !states.iter().any(|s| s.eq_ignore_ascii_case(state)) {
                    return None;
                }
                if !types.is_empty() && !types.iter().any(|t| t.eq_ignore_ascii_case("classic")) {
                    return None;
                }
                Some(ListedGroup {
                    group_id: g.group_id.clone(),
                    protocol_type: g.protocol_type.clone().unwrap_or_default(),
                    state: state.to_string(),
                    group_type: "classic",
                })
            })
            .collect();
        // Consumer groups (KIP-848): protocol type `consumer`, their own
        // states.
        let wanted = |name: &str, list: &[String]| {
            list.is_empty() || list.iter().any(|s| s.eq_ignore_ascii_case(name))
        };
        for (id, state) in self.consumer.list() {
            if wanted(state.as_str(), states) && wanted("consumer", types) {
                out.push(ListedGroup {
                    group_id: id,
                    protocol_type: "consumer".to_string(),
                    state: state.as_str().to_string(),
                    group_type: "consumer",
                });
            }
        }
        // Share groups (KIP-932): protocol type `share`, Empty or Stable.
        for (id, state) in self.share.list() {
            if wanted(state.as_str(), states) && wanted("share", types) {
                out.push(ListedGroup {
                    group_id: id,
                    protocol_type: "share".to_string(),
                    state: state.as_str().to_string(),
                    group_type: "share",
                });
            }
        }
        out.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        out
    }

    /// First step of DeleteGroups: the tombstones to append (the group's
    /// offsets and metadata). Kafka's answers by state: Empty → deletable;
    /// PreparingRebalance, CompletingRebalance, Stable → NON_EMPTY_GROUP;
    /// Dead or unknown → GROUP_ID_NOT_FOUND.
    pub fn plan_delete_group(&self, group_id: &str) -> Result<Vec<OffsetsTopicRecord>, GroupError> {
        let Some(grp) = self.groups.get(group_id) else {
            return Err(GroupError::GroupIdNotFound);
        };
        match grp.state {
            GroupState::Dead => return Err(GroupError::GroupIdNotFound),
            GroupState::PreparingRebalance
            | GroupState::CompletingRebalance
            | GroupState::Stable => return Err(GroupError::NonEmptyGroup),
            GroupState::Empty => {}
        }
        let mut recs = self.offset_tombstones(group_id);
        recs.push((records::group_key(group_id), None));
        Ok(recs)
    }

    /// The tombstones of every offset `group_id` committed.
    fn offset_tombstones(&self, group_id: &str) -> Vec<OffsetsTopicRecord> {
        self.offsets
            .committed
            .get(group_id)
            .map(|m| {
                m.keys()
                    .map(|(t, p)| (records::offset_key(group_id, t, *p), None))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// First step of DeleteGroups of a consumer group (KIP-848), as Kafka's
    /// `GroupCoordinatorShard.deleteGroups`: the tombstones of its offsets,
    /// then of its records (keys 8, 7, 6, 5, 4, 3; see
    /// [`ConsumerGroups::plan_delete`](super::consumer::ConsumerGroups::plan_delete)),
    /// with the group taken out at once. Ok(None) when `group_id` is no
    /// consumer group here; NON_EMPTY_GROUP while it has members.
    pub fn begin_delete_consumer_group(
        &mut self,
        group_id: &str,
    ) -> Result<Option<(Vec<OffsetsTopicRecord>, TakenGroup)>, GroupError> {
        if !self.consumer.contains(group_id) {
            return Ok(None);
        }
        let tombstones = self.consumer.plan_delete(group_id)?;
        let mut recs = self.offset_tombstones(group_id);
        recs.extend(tombstones.iter().map(ConsumerRecord::encode));
        Ok(self
            .consumer
            .take_for_delete(group_id)
            .map(|taken| (recs, taken)))
    }

    /// The tombstones of a consumer group's DeleteGroups could not be
    /// appended: the group is put back.
    pub fn abort_delete_consumer_group(&mut self, taken: TakenGroup) {
        self.consumer.restore(taken);
    }

    /// Last step of DeleteGroups of a consumer group, once its tombstones
    /// are appended: its offsets are gone (the group was taken out first).
    pub fn apply_delete_consumer_group(&mut self, group_id: &str) {
        self.offsets.committed.remove(group_id);
    }

    /// First step of DeleteGroups as the glue runs it: the tombstones of
    /// [`GroupCore::plan_delete_group`], with the group marked Dead at once
    /// (as Kafka does before it writes them), so that a JoinGroup arriving
    /// while they are appended is answered COORDINATOR_NOT_AVAILABLE instead
    /// of joining a group about to vanish.
    pub fn begin_delete_group(
        &mut self,
        group_id: &str,
        now: i64,
    ) -> Result<Vec<OffsetsTopicRecord>, GroupError> {
        let records = self.plan_delete_group(group_id)?;
        if let Some(g) = self.groups.get_mut(group_id) {
            g.transition(GroupState::Dead, now);
        }
        Ok(records)
    }

    /// The tombstones of a DeleteGroups could not be appended: the group,
    /// marked Dead by [`GroupCore::begin_delete_group`], is Empty again.
    pub fn abort_delete_group(&mut self, group_id: &str, now: i64) {
        if let Some(g) = self.groups.get_mut(group_id) {
            if g.state == GroupState::Dead {
                g.transition(GroupState::Empty, now);
            }
        }
    }

    /// Second step of DeleteGroups, once the tombstones are appended: the
    /// group and its offsets are gone. Any request still parked in it is
    /// answered first ([`GroupCore::fail_parked`]).
    pub fn apply_delete_group(&mut self, group_id: &str, now: i64) {
        self.fail_parked(group_id);
        if let Some(g) = self.groups.get_mut(group_id) {
            g.transition(GroupState::Dead, now);
        }
        self.groups.remove(group_id);
        self.offsets.committed.remove(group_id);
    }
}
