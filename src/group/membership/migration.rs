//! The classic side of the online conversions between classic and consumer
//! groups (KIP-848's migration): a live classic group handed over to the
//! consumer group state machine, and a consumer group of classic members
//! rebuilt as a classic group that then rebalances. Pure, as its parent
//! [`super`].

use super::*;
use crate::group::consumer::classic::{ClassicMember, ClassicSnapshot};

impl GroupCore {
    /// The live classic group `id` as a conversion into a consumer group
    /// reads it: generation, protocol and members (leader first). None when
    /// there is no classic group `id`.
    pub fn classic_snapshot(&self, id: &str) -> Option<ClassicSnapshot> {
        let grp = self.groups.get(id)?;
        let mut members = Vec::new();
        for m in grp.members.values() {
            let member = ClassicMember {
                member_id: m.member_id.clone(),
                instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                session_timeout_ms: m.session_timeout_ms,
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                protocols: m.protocols.clone(),
                assignment: m.assignment.clone(),
            };
            if grp.leader.as_deref() == Some(m.member_id.as_str()) {
                members.insert(0, member);
            } else {
                members.push(member);
            }
        }
        Some(ClassicSnapshot {
            group_id: id.to_string(),
            generation: grp.generation,
            protocol_name: grp.protocol_name.clone(),
            members,
        })
    }

    /// Removes the classic group `id` once it was converted into a
    /// consumer group: its parked JoinGroups and SyncGroups are answered
    /// REBALANCE_IN_PROGRESS (their members rejoin the consumer group).
    /// Gives its tombstone, to append before the consumer group's records.
    pub fn remove_upgraded(&mut self, id: &str) -> OffsetsTopicRecord {
        if let Some(mut grp) = self.groups.remove(id) {
            for m in grp.members.values_mut() {
                if let Some(handle) = m.awaiting_join.take() {
                    let result = JoinResult::error(GroupError::RebalanceInProgress, &m.member_id);
                    self.effects.push(Effect::Join { handle, result });
                }
                if let Some(handle) = m.awaiting_sync.take() {
                    let result = SyncResult::error(GroupError::RebalanceInProgress);
                    self.effects.push(Effect::Sync { handle, result });
                }
            }
        }
        (records::group_key(id), None)
    }

    /// Builds the classic group `snapshot` (a consumer group whose members
    /// all speak the classic protocol) and starts a rebalance, so every
    /// member rejoins it (their heartbeats get REBALANCE_IN_PROGRESS).
    /// Gives the classic group's record, to append after the consumer
    /// group's tombstones.
    pub fn adopt_downgraded(
        &mut self,
        cfg: &GroupConfig,
        snapshot: ClassicSnapshot,
        now: i64,
    ) -> OffsetsTopicRecord {
        let mut grp = Group::new(&snapshot.group_id, now);
        grp.generation = snapshot.generation;
        grp.protocol_type = Some("consumer".to_string());
        grp.protocol_name = snapshot.protocol_name.clone();
        grp.leader = snapshot.members.first().map(|m| m.member_id.clone());
        for cm in snapshot.members {
            if let Some(inst) = &cm.instance_id {
                grp.static_members
                    .insert(inst.clone(), cm.member_id.clone());
            }
            grp.members.insert(
                cm.member_id.clone(),
                Member {
                    member_id: cm.member_id,
                    group_instance_id: cm.instance_id,
                    client_id: cm.client_id,
                    client_host: cm.client_host,
                    session_timeout_ms: cm.session_timeout_ms,
                    rebalance_timeout_ms: cm.rebalance_timeout_ms,
                    protocol_type: "consumer".to_string(),
                    protocols: cm.protocols,
                    assignment: cm.assignment,
                    last_heartbeat_ms: now,
                    awaiting_join: None,
                    awaiting_sync: None,
                },
            );
        }
        grp.transition(GroupState::Stable, now);
        let record = group_record(&grp);
        let out = &mut self.effects;
        prepare_rebalance(&mut grp, cfg, now, out);
        schedule(&mut grp, now, out);
        self.groups.insert(snapshot.group_id, grp);
        record
    }
}
