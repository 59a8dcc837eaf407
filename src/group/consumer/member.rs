//! The stages of a member's (re)join or heartbeat that both protocols share
//! (ConsumerGroupHeartbeat in `heartbeat`, the classic JoinGroup in
//! `classic`): admitting the member (a static member taking over its
//! instance's standing), recording its metadata and bumping the group epoch
//! when its subscription changed, and reconciling it towards its target.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::group::{current_record, to_parts, Group, Member};
use super::reconcile::{reconcile, Current, MemberState};
use super::records::{ConsumerRecord, MemberMetadata};
use super::{Assignment, TopicsView};
use crate::group::membership::Effect;

impl Group {
    /// The member `member_id` as it stands before this request, now in the
    /// group: when it `replaces` a static member's old id, the old member is
    /// removed (its tombstones) and its standing and target move to the new
    /// id; a new member starts empty.
    pub(super) fn admit(
        &mut self,
        gid: &str,
        member_id: &str,
        replaces: Option<&str>,
        is_new: bool,
        records: &mut Vec<ConsumerRecord>,
    ) -> Member {
        if let Some(old) = replaces {
            let m = self.members.get(old).cloned().unwrap_or_default();
            let target = self.targets.get(old).cloned();
            self.remove_member(gid, old, records);
            if let Some(target) = target {
                records.push(ConsumerRecord::TargetAssignmentMember {
                    group_id: gid.to_string(),
                    member_id: member_id.to_string(),
                    value: Some(to_parts(&target)),
                });
                self.targets.insert(member_id.to_string(), target);
            }
            self.members
                .insert(member_id.to_string(), Member::default());
            self.set_current(member_id, m.current.clone());
            m
        } else if is_new {
            self.members
                .insert(member_id.to_string(), Member::default());
            Member::default()
        } else {
            self.members.get(member_id).cloned().unwrap_or_default()
        }
    }

    /// Takes the member's new metadata (record 5 when it is new, replaced
    /// another or changed; its instance id mapped), then bumps the group
    /// epoch if its subscription or assignor changed, or computes a due
    /// target ([`Group::assignment_due`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn update_member(
        &mut self,
        gid: &str,
        member_id: &str,
        before: &MemberMetadata,
        meta: MemberMetadata,
        is_new: bool,
        replaced: bool,
        topics: &dyn TopicsView,
        now: i64,
        records: &mut Vec<ConsumerRecord>,
    ) {
        let subscription_changed = is_new
            || meta.subscribed_topic_names != before.subscribed_topic_names
            || meta.subscribed_topic_regex != before.subscribed_topic_regex
            || meta.server_assignor != before.server_assignor;
        if is_new || replaced || meta != *before {
            records.push(ConsumerRecord::MemberMetadata {
                group_id: gid.to_string(),
                member_id: member_id.to_string(),
                value: Some(meta.clone()),
            });
        }
        if let Some(inst) = &meta.instance_id {
            self.instances.insert(inst.clone(), member_id.to_string());
        }
        if let Some(m) = self.members.get_mut(member_id) {
            m.meta = meta;
        }
        if subscription_changed {
            self.bump(gid, topics, now, records);
        } else if self.assignment_due(now) {
            self.assign(gid, topics, now, records);
        }
    }

    /// Moves the member one step towards its target from what it says it
    /// `owned` (record 8 when its standing changed, or `force_record`); arms
    /// its rebalance deadline when it must revoke (`rebalance.timeout.ms` of
    /// its metadata), and restarts its session (`session_ms`). Gives its
    /// standing before and after; None when the member is gone.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn reconcile_member(
        &mut self,
        gid: &str,
        member_id: &str,
        owned: Option<&Assignment>,
        topics: &dyn TopicsView,
        session_ms: i32,
        force_record: bool,
        now: i64,
        out: &mut Vec<Effect>,
        records: &mut Vec<ConsumerRecord>,
    ) -> Option<(Current, Current)> {
        let cur = self.members.get(member_id)?.current.clone();
        let empty = BTreeMap::new();
        let target = self.targets.get(member_id).unwrap_or(&empty);
        let holders = &self.holders;
        let taken = |t: Uuid, p: i32| holders.get(&(t, p)).is_some_and(|h| h != member_id);
        let exists = |t: Uuid| topics.by_id(t).is_some();
        let next = reconcile(&cur, self.assignment_epoch, target, owned, &taken, &exists);
        if next != cur || force_record {
            records.push(current_record(gid, member_id, &next));
        }
        let entering_unrevoked = next.state == MemberState::UnrevokedPartitions
            && cur.state != MemberState::UnrevokedPartitions;
        self.set_current(member_id, next.clone());
        let m = self.members.get_mut(member_id)?;
        if m.current.state != MemberState::UnrevokedPartitions {
            m.rebalance_deadline = None;
        } else if entering_unrevoked || m.rebalance_deadline.is_none() {
            let at_ms = now + i64::from(m.meta.rebalance_timeout_ms.max(0));
            m.rebalance_deadline = Some(at_ms);
            out.push(Effect::Timer {
                group_id: gid.to_string(),
                at_ms,
            });
        }
        let at_ms = now + i64::from(session_ms.max(1));
        m.session_deadline = Some(at_ms);
        out.push(Effect::Timer {
            group_id: gid.to_string(),
            at_ms,
        });
        Some((cur, next))
    }
}
