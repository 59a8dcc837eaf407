//! Loading a coordinator's state from one `__consumer_offsets` partition:
//! every record from the log start to the log end is replayed into the
//! [`GroupCore`], including the transaction markers that commit or abort the
//! offsets TxnOffsetCommit wrote. The coordinator reads the partition in
//! chunks (`shard::internal::replay_log`) when this broker becomes its
//! leader and gives each record to [`replay_record`].

use kafka_protocol::records::Record;

use super::membership::GroupCore;
use super::records::{self, OffsetsRecord};
use super::state::{GroupState, Member};
use crate::storage::txn_index::parse_control_record;

/// Applies one record of partition `partition`; true when it was a group or
/// offset record applied as committed.
pub(crate) fn replay_record(
    core: &mut GroupCore,
    r: &Record,
    partition: i32,
    offsets_partitions: i32,
    now: i64,
) -> bool {
    let Some(key) = &r.key else {
        return false;
    };
    if r.control {
        if let Some(m) = parse_control_record(key, r.value.as_deref()) {
            core.complete_txn(r.producer_id, partition, offsets_partitions, m.commit, now);
        }
        return false;
    }
    let skip = |e: &dyn std::fmt::Display| {
        log::warn!(
            "skipping record at offset {} of __consumer_offsets-{partition}: {e}",
            r.offset
        );
        false
    };
    let key_version = key.first_chunk::<2>().map(|v| i16::from_be_bytes(*v));
    if let Some(10..=15) = key_version {
        use crate::group::share::records::ShareGroupRecord;
        return match ShareGroupRecord::decode(key, r.value.as_deref()) {
            Ok(rec) => {
                core.share.replay(rec);
                true
            }
            Err(e) => skip(&e),
        };
    }
    if let Some(3..=8 | 16) = key_version {
        use crate::group::consumer::records::ConsumerRecord;
        return match ConsumerRecord::decode(key, r.value.as_deref()) {
            Ok(rec) => {
                core.consumer.replay(rec);
                true
            }
            Err(e) => skip(&e),
        };
    }
    match records::decode(key, r.value.as_ref()) {
        Ok(OffsetsRecord::Offset {
            group,
            topic,
            partition,
            value: Some(v),
        }) if r.transactional => {
            core.offsets
                .pending_txn
                .entry(r.producer_id)
                .or_default()
                .entry(group)
                .or_default()
                .insert((topic, partition), v);
            false
        }
        Ok(rec) => {
            replay(core, rec, now);
            true
        }
        Err(e) => skip(&e),
    }
}

/// Applies one decoded (non-transactional) `__consumer_offsets` record.
pub(crate) fn replay(core: &mut GroupCore, record: OffsetsRecord, now: i64) {
    match record {
        OffsetsRecord::Offset {
            group,
            topic,
            partition,
            value,
        } => match value {
            Some(v) => {
                let tp = (topic, partition);
                core.offsets
                    .committed
                    .entry(group.clone())
                    .or_default()
                    .insert(tp.clone(), v);
                core.offsets.supersede_pending(&group, &tp);
                if !core.consumer.contains(&group) {
                    core.get_or_create(&group, now);
                }
            }
            None => {
                if let Some(m) = core.offsets.committed.get_mut(&group) {
                    m.remove(&(topic, partition));
                }
            }
        },
        OffsetsRecord::Group { group, value: None } => {
            core.groups.remove(&group);
            core.offsets.committed.remove(&group);
        }
        OffsetsRecord::Group {
            group,
            value: Some(v),
        } => {
            let g = core.get_or_create(&group, now);
            g.generation = v.generation;
            g.protocol_type = (!v.protocol_type.is_empty()).then_some(v.protocol_type.clone());
            g.protocol_name = v.protocol.clone();
            g.leader = v.leader.clone();
            g.members.clear();
            g.static_members.clear();
            for m in v.members {
                if let Some(i) = &m.group_instance_id {
                    g.static_members.insert(i.clone(), m.member_id.clone());
                }
                let protocols = match &v.protocol {
                    Some(p) => vec![(p.clone(), m.subscription.clone())],
                    None => Vec::new(),
                };
                g.members.insert(
                    m.member_id.clone(),
                    Member {
                        member_id: m.member_id,
                        group_instance_id: m.group_instance_id,
                        client_id: m.client_id,
                        client_host: m.client_host,
                        session_timeout_ms: m.session_timeout_ms,
                        rebalance_timeout_ms: m.rebalance_timeout_ms,
                        protocol_type: v.protocol_type.clone(),
                        protocols,
                        assignment: m.assignment,
                        last_heartbeat_ms: now,
                        awaiting_join: None,
                        awaiting_sync: None,
                    },
                );
            }
            let state = if g.members.is_empty() {
                GroupState::Empty
            } else {
                GroupState::Stable
            };
            let at = if v.current_state_timestamp > 0 {
                v.current_state_timestamp
            } else {
                now
            };
            g.transition(state, at);
        }
    }
}
