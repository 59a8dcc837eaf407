//! Loading: consumer group records read back from `__consumer_offsets`
//! rebuild the groups (Kafka's `GroupMetadataManager.replay`), then the
//! members' session (and pending rebalance) timers are armed.

use std::collections::{BTreeSet, HashMap};

use super::group::{current_from, from_parts, Group};
use super::reconcile::{Current, MemberState};
use super::records::ConsumerRecord;
use super::ConsumerGroupConfig;
use crate::group::membership::Effect;

fn default_assignors() -> Vec<String> {
    ConsumerGroupConfig::default().assignors
}

/// The group a record names, created empty when it is the first record of
/// it replayed.
fn group_of(groups: &mut HashMap<String, Group>, group_id: String) -> &mut Group {
    groups
        .entry(group_id)
        .or_insert_with(|| Group::new(default_assignors()))
}

/// Applies one record: 3, 5, 6, 7, 8 and 16 set or (tombstones) remove; 4
/// is ignored (superseded).
pub(super) fn replay(groups: &mut HashMap<String, Group>, record: ConsumerRecord) {
    match record {
        ConsumerRecord::GroupMetadata { group_id, value } => match value {
            None => {
                groups.remove(&group_id);
            }
            Some((epoch, hash)) => {
                let g = group_of(groups, group_id);
                g.epoch = epoch;
                g.metadata_hash = hash;
            }
        },
        ConsumerRecord::PartitionMetadata { .. } => {}
        ConsumerRecord::RegularExpression {
            group_id,
            regex,
            value,
        } => match value {
            None => {
                if let Some(g) = groups.get_mut(&group_id) {
                    g.resolved.remove(&regex);
                }
            }
            Some((topics, _, _)) => {
                let g = group_of(groups, group_id);
                g.resolved.insert(regex, topics.into_iter().collect());
            }
        },
        ConsumerRecord::MemberMetadata {
            group_id,
            member_id,
            value,
        } => match value {
            None => {
                if let Some(g) = groups.get_mut(&group_id) {
                    g.drop_member(&member_id);
                }
            }
            Some(meta) => {
                let g = group_of(groups, group_id);
                let m = g.members.entry(member_id.clone()).or_default();
                if let Some(old) = m.meta.instance_id.take() {
                    if g.instances.get(&old).is_some_and(|id| *id == member_id) {
                        g.instances.remove(&old);
                    }
                }
                if let Some(inst) = &meta.instance_id {
                    g.instances.insert(inst.clone(), member_id.clone());
                }
                m.meta = meta;
            }
        },
        ConsumerRecord::TargetAssignmentMetadata { group_id, value } => {
            let g = group_of(groups, group_id);
            let (epoch, ts) = value.unwrap_or((0, 0));
            g.assignment_epoch = epoch;
            g.assignment_ts = ts;
        }
        ConsumerRecord::TargetAssignmentMember {
            group_id,
            member_id,
            value,
        } => match value {
            None => {
                if let Some(g) = groups.get_mut(&group_id) {
                    g.targets.remove(&member_id);
                }
            }
            Some(parts) => {
                let g = group_of(groups, group_id);
                g.targets.insert(member_id, from_parts(&parts));
            }
        },
        ConsumerRecord::CurrentMemberAssignment {
            group_id,
            member_id,
            value,
        } => match value {
            None => {
                if let Some(g) = groups.get_mut(&group_id) {
                    g.set_current(&member_id, Current::default());
                }
            }
            Some(v) => {
                let g = group_of(groups, group_id);
                g.members.entry(member_id.clone()).or_default();
                g.set_current(&member_id, current_from(&v));
            }
        },
    }
}

/// Arms every member's session timer (`group.consumer.session.timeout.ms`)
/// and the rebalance timer of members still revoking, one `Effect::Timer`
/// per group and deadline.
pub(super) fn arm_after_load(
    groups: &mut HashMap<String, Group>,
    cfg_of: &dyn Fn(&str) -> ConsumerGroupConfig,
    now: i64,
    out: &mut Vec<Effect>,
) {
    let mut ids: Vec<&String> = groups.keys().collect();
    ids.sort();
    let ids: Vec<String> = ids.into_iter().cloned().collect();
    for id in ids {
        let Some(g) = groups.get_mut(&id) else {
            continue;
        };
        let cfg = &cfg_of(&id);
        g.configure(cfg);
        if g.members.is_empty() {
            continue;
        }
        // Every member, classic ones too, gets the consumer session timeout
        // at a load, as Kafka's coordinator arms them; a classic member's
        // own timeout applies again from its next heartbeat.
        let mut deadlines: BTreeSet<i64> = BTreeSet::new();
        for m in g.members.values_mut() {
            let session = now + i64::from(cfg.session_timeout_ms);
            m.session_deadline = Some(session);
            deadlines.insert(session);
            if m.current.state == MemberState::UnrevokedPartitions {
                let at = now + i64::from(m.meta.rebalance_timeout_ms.max(0));
                m.rebalance_deadline = Some(at);
                deadlines.insert(at);
            }
        }
        for at_ms in deadlines {
            out.push(Effect::Timer {
                group_id: id.clone(),
                at_ms,
            });
        }
    }
}
