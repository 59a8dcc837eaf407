//! The admin requests on consumer groups: DeleteGroups (Kafka's
//! `ConsumerGroup.validateDeleteGroup` and `createGroupTombstoneRecords`)
//! and OffsetDelete's subscription check (`ConsumerGroup.isSubscribedToTopic`).
//! Pure, as the rest of the state machine.

use std::collections::BTreeSet;

use regex::Regex;

use super::group::Group;
use super::records::ConsumerRecord;
use super::{ConsumerGroupConfig, ConsumerGroups, TopicsView};
use crate::group::error::GroupError;
use crate::group::membership::Effect;

/// A consumer group taken out by [`ConsumerGroups::take_for_delete`]
/// while its tombstones are appended; put back by
/// [`ConsumerGroups::restore`] when they could not be.
#[derive(Debug)]
pub struct TakenGroup {
    group_id: String,
    group: Group,
}

impl ConsumerGroups {
    /// The tombstones that delete the consumer group `group_id`, in Kafka
    /// 4.4's order: each member's current assignment (8), each member's
    /// target assignment (7), the target assignment epoch (6), each
    /// member's subscription (5), the superseded subscription metadata (4)
    /// and the group epoch (3). Errors: NON_EMPTY_GROUP while it has
    /// members; GROUP_ID_NOT_FOUND when it is no consumer group here.
    pub fn plan_delete(&self, group_id: &str) -> Result<Vec<ConsumerRecord>, GroupError> {
        let Some(group) = self.groups.get(group_id) else {
            return Err(GroupError::GroupIdNotFound);
        };
        if !group.members.is_empty() {
            return Err(GroupError::NonEmptyGroup);
        }
        Ok(tombstones(group_id, group))
    }

    /// Takes the consumer group `group_id` out (DeleteGroups, once
    /// [`ConsumerGroups::plan_delete`] allowed it): a heartbeat arriving
    /// while the tombstones are appended starts a new group.
    pub fn take_for_delete(&mut self, group_id: &str) -> Option<TakenGroup> {
        self.groups.remove(group_id).map(|group| TakenGroup {
            group_id: group_id.to_string(),
            group,
        })
    }

    /// Puts a group taken by [`ConsumerGroups::take_for_delete`] back (its
    /// tombstones could not be appended), unless a new group of that id
    /// was started meanwhile.
    pub fn restore(&mut self, taken: TakenGroup) {
        self.groups.entry(taken.group_id).or_insert(taken.group);
    }

    /// After a load: arms the session timers of the members found, each
    /// group with its own settings (`cfg_of` gives them by group id: the
    /// broker's with the group's configs over them).
    pub fn arm_after_load_with(
        &mut self,
        cfg_of: &dyn Fn(&str) -> ConsumerGroupConfig,
        now: i64,
        out: &mut Vec<Effect>,
    ) {
        super::replay::arm_after_load(&mut self.groups, cfg_of, now, out);
    }

    /// The topic names the members of consumer group `group_id` subscribe
    /// to: their names, and the topics of `topics` their regexes match
    /// whole. None when it is no consumer group here. OffsetDelete answers
    /// GROUP_SUBSCRIBED_TO_TOPIC for these (KIP-496, KIP-848).
    pub fn subscribed_topics(
        &self,
        group_id: &str,
        topics: &dyn TopicsView,
    ) -> Option<BTreeSet<String>> {
        let group = self.groups.get(group_id)?;
        let mut out = BTreeSet::new();
        let mut names: Option<Vec<String>> = None;
        for m in group.members.values() {
            out.extend(m.meta.subscribed_topic_names.iter().cloned());
            let Some(re) = &m.meta.subscribed_topic_regex else {
                continue;
            };
            let Ok(compiled) = Regex::new(&format!("^(?:{re})$")) else {
                continue;
            };
            let all = names.get_or_insert_with(|| topics.names());
            out.extend(all.iter().filter(|n| compiled.is_match(n)).cloned());
        }
        Some(out)
    }
}

/// The tombstones of every record of `group` (see
/// [`ConsumerGroups::plan_delete`] for the order).
fn tombstones(group_id: &str, group: &Group) -> Vec<ConsumerRecord> {
    let gid = || group_id.to_string();
    let mut out = Vec::new();
    for id in group.members.keys() {
        out.push(ConsumerRecord::CurrentMemberAssignment {
            group_id: gid(),
            member_id: id.clone(),
            value: None,
        });
    }
    for id in group.members.keys() {
        out.push(ConsumerRecord::TargetAssignmentMember {
            group_id: gid(),
            member_id: id.clone(),
            value: None,
        });
    }
    out.push(ConsumerRecord::TargetAssignmentMetadata {
        group_id: gid(),
        value: None,
    });
    for id in group.members.keys() {
        out.push(ConsumerRecord::MemberMetadata {
            group_id: gid(),
            member_id: id.clone(),
            value: None,
        });
    }
    out.push(ConsumerRecord::PartitionMetadata { group_id: gid() });
    out.push(ConsumerRecord::GroupMetadata {
        group_id: gid(),
        value: None,
    });
    out
}

#[cfg(test)]
#[path = "admin_tests.rs"]
mod tests;
