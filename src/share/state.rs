//! The share coordinator's state (KIP-932) as pure functions: what
//! `__share_group_state` holds for each share-partition, how its records
//! replay into it, and the decisions of InitializeShareGroupState,
//! ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState and
//! ReadShareGroupStateSummary (request, state → record to write, answer or
//! [`ShareStateError`]), with the rules Kafka 4.4 answers
//! (docs/decisions/share-groups.md, "The share coordinator").

use std::collections::{BTreeMap, HashMap};

use uuid::Uuid;

use super::partition::StateBatch;
use super::records::{ShareSnapshot, ShareStateKey, ShareStateRecord, ShareUpdate};

/// A share-partition's key in the coordinator's map: (group id, topic id,
/// partition).
pub type StateKey = (String, Uuid, i32);

/// The map key of a record key.
pub fn state_key(k: &ShareStateKey) -> StateKey {
    (k.group_id.clone(), k.topic_id, k.partition)
}

/// The record key of a map key.
pub fn record_key(k: &StateKey) -> ShareStateKey {
    ShareStateKey {
        group_id: k.0.clone(),
        topic_id: k.1,
        partition: k.2,
    }
}

/// The coordinator key of a share-partition, as FindCoordinator key type 2
/// carries it and its `__share_group_state` partition is computed from:
/// `groupId:topicId:partition`, the topic id in Kafka's base64 form.
pub fn coordinator_key(group_id: &str, topic_id: Uuid, partition: i32) -> String {
    use base64::Engine;
    let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(topic_id.as_bytes());
    format!("{group_id}:{id}:{partition}")
}

/// Parses a FindCoordinator key type 2 key as Kafka 4.4 accepts it: the
/// last two `:`-separated fields are a base64 topic id and a partition
/// number (negative ones included), the rest a non-empty group id (which
/// may hold `:`). None for anything else (INVALID_REQUEST).
pub fn parse_coordinator_key(key: &str) -> Option<(String, Uuid, i32)> {
    use base64::Engine;
    let mut parts = key.rsplitn(3, ':');
    let partition: i32 = parts.next()?.parse().ok()?;
    let id = parts.next()?;
    let group = parts.next()?;
    if group.is_empty() {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(id)
        .ok()?;
    let topic_id = Uuid::from_slice(&bytes).ok()?;
    Some((group.to_string(), topic_id, partition))
}

/// What the coordinator knows of one share-partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareState {
    /// The epoch of the last ShareSnapshot (counts snapshots).
    pub snapshot_epoch: i32,
    /// The state epoch (set by InitializeShareGroupState).
    pub state_epoch: i32,
    /// The share-partition leader's epoch: the highest the records carry
    /// (a read that gives a newer one writes it; writes carry it on).
    pub leader_epoch: i32,
    /// The share-partition start offset (-1: not known yet).
    pub start_offset: i64,
    /// Tagged DeliveryCompleteCount (-1 unknown).
    pub delivery_complete_count: i32,
    /// When the share-partition's first snapshot was written (ms).
    pub create_timestamp: i64,
    /// When its last snapshot was written (ms).
    pub write_timestamp: i64,
    /// Non-overlapping runs in offset order, adjacent equal runs joined.
    pub batches: Vec<StateBatch>,
    /// ShareUpdate records since the last ShareSnapshot.
    pub updates_since_snapshot: i32,
}

/// Why a share-state request is refused; each maps to Kafka's code in
/// `crate::error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShareStateError {
    /// INVALID_REQUEST (42): a negative partition.
    #[error("The partition id cannot be a negative number.")]
    NegativePartition,
    /// INVALID_REQUEST (42): a negative leader epoch (read, write).
    #[error("The leader epoch cannot be a negative number.")]
    NegativeLeaderEpoch,
    /// INVALID_REQUEST (42): a read of a share-partition never initialized
    /// (or deleted).
    #[error("Read operation on uninitialized share partition not allowed.")]
    ReadUninitialized,
    /// INVALID_REQUEST (42): a write to a share-partition never initialized
    /// (or deleted).
    #[error("Write operation on uninitialized share partition not allowed.")]
    WriteUninitialized,
    /// FENCED_LEADER_EPOCH (74): the request's leader epoch is older than
    /// one the coordinator has seen.
    #[error("The leader epoch in the request is older than the epoch on the broker.")]
    FencedLeaderEpoch,
    /// FENCED_STATE_EPOCH (124): the request's state epoch is older than the
    /// share-partition's.
    #[error("The coordinator rejected the request because the state epoch did not match.")]
    FencedStateEpoch,
    /// UNKNOWN_TOPIC_OR_PARTITION (3): initialize, delete or summary of a
    /// topic id or partition the metadata does not have.
    #[error("This server does not host this topic-partition.")]
    UnknownTopicOrPartition,
}

/// The share-partitions of the `__share_group_state` partitions this shard
/// leads.
#[derive(Debug, Default)]
pub struct ShareStates {
    states: HashMap<StateKey, ShareState>,
}

/// What ReadShareGroupState answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadAnswer {
    /// The state epoch.
    pub state_epoch: i32,
    /// The share-partition start offset.
    pub start_offset: i64,
    /// The runs.
    pub batches: Vec<StateBatch>,
}

/// What ReadShareGroupStateSummary answers: (state epoch, leader epoch,
/// start offset); (0, 0, -1) for a share-partition not initialized, as
/// Kafka 4.4 answers.
pub type SummaryAnswer = (i32, i32, i64);

impl ShareStates {
    /// The state of `key`, if initialized.
    pub fn get(&self, key: &StateKey) -> Option<&ShareState> {
        self.states.get(key)
    }

    /// Forgets the share-partitions whose `__share_group_state` partition
    /// satisfies `gone` (this broker no longer leads it).
    pub fn retain(&mut self, keep: impl Fn(&StateKey) -> bool) -> usize {
        let before = self.states.len();
        self.states.retain(|k, _| keep(k));
        before - self.states.len()
    }

    /// Takes over the states of a loaded partition.
    pub fn adopt(&mut self, loaded: ShareStates) {
        self.states.extend(loaded.states);
    }

    /// The number of share-partitions known.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Whether none is known.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// Applies one record, on load and after each append: a snapshot
    /// replaces the state, an update is merged into it, a tombstone (of
    /// either key type) forgets it.
    pub fn apply(&mut self, record: &ShareStateRecord) {
        match record {
            ShareStateRecord::Snapshot { key, value: None }
            | ShareStateRecord::Update { key, value: None } => {
                self.states.remove(&state_key(key));
            }
            ShareStateRecord::Snapshot {
                key,
                value: Some(v),
            } => {
                let k = state_key(key);
                let seen = self.states.get(&k).map_or(-1, |s| s.leader_epoch);
                self.states.insert(
                    k,
                    ShareState {
                        snapshot_epoch: v.snapshot_epoch,
                        state_epoch: v.state_epoch,
                        leader_epoch: seen.max(v.leader_epoch),
                        start_offset: v.start_offset,
                        delivery_complete_count: v.delivery_complete_count,
                        create_timestamp: v.create_timestamp,
                        write_timestamp: v.write_timestamp,
                        batches: v.batches.clone(),
                        updates_since_snapshot: 0,
                    },
                );
            }
            ShareStateRecord::Update {
                key,
                value: Some(u),
            } => {
                let Some(s) = self.states.get_mut(&state_key(key)) else {
                    // An update without its snapshot (compacted or
                    // deleted): nothing to merge it into.
                    return;
                };
                if u.start_offset != -1 {
                    s.start_offset = u.start_offset;
                }
                if u.leader_epoch != -1 {
                    s.leader_epoch = s.leader_epoch.max(u.leader_epoch);
                }
                s.delivery_complete_count = u.delivery_complete_count;
                s.batches = merge_batches(&s.batches, &u.batches, s.start_offset);
                s.updates_since_snapshot += 1;
            }
        }
    }

    /// InitializeShareGroupState of one share-partition: the ShareSnapshot
    /// to write (a fresh state at `start_offset` with `state_epoch`, leader
    /// epoch 0 and DeliveryCompleteCount 0, -1 with an unknown start
    /// offset, as Kafka 4.4 writes it; the leader epoch seen stays).
    /// `known` says whether the metadata has the topic id and partition.
    /// Errors: NegativePartition, UnknownTopicOrPartition, FencedStateEpoch
    /// (the state's epoch is higher; an equal one initializes again).
    pub fn initialize(
        &self,
        key: &StateKey,
        state_epoch: i32,
        start_offset: i64,
        known: bool,
        now_ms: i64,
    ) -> Result<ShareStateRecord, ShareStateError> {
        if key.2 < 0 {
            return Err(ShareStateError::NegativePartition);
        }
        if !known {
            return Err(ShareStateError::UnknownTopicOrPartition);
        }
        let current = self.states.get(key);
        if current.is_some_and(|s| s.state_epoch > state_epoch) {
            return Err(ShareStateError::FencedStateEpoch);
        }
        Ok(ShareStateRecord::Snapshot {
            key: record_key(key),
            value: Some(ShareSnapshot {
                snapshot_epoch: current.map_or(0, |s| s.snapshot_epoch + 1),
                state_epoch,
                leader_epoch: 0,
                start_offset,
                delivery_complete_count: if start_offset == -1 { -1 } else { 0 },
                create_timestamp: now_ms,
                write_timestamp: now_ms,
                batches: Vec::new(),
            }),
        })
    }

    /// ReadShareGroupState of one share-partition by the leader at
    /// `leader_epoch`: the answer, and the record to write first when the
    /// epoch is newer than the state's, so reads and writes of older
    /// leaders are fenced from then on, restarts included: a ShareUpdate
    /// with the new epoch, the start offset and no runs, or a whole
    /// ShareSnapshot when `per_snapshot` updates were written since the last
    /// one, as Kafka 4.4 writes them.
    /// Errors: NegativePartition, NegativeLeaderEpoch, ReadUninitialized,
    /// FencedLeaderEpoch.
    pub fn read(
        &self,
        key: &StateKey,
        leader_epoch: i32,
        per_snapshot: i32,
        now_ms: i64,
    ) -> Result<(ReadAnswer, Option<ShareStateRecord>), ShareStateError> {
        if key.2 < 0 {
            return Err(ShareStateError::NegativePartition);
        }
        if leader_epoch < 0 {
            return Err(ShareStateError::NegativeLeaderEpoch);
        }
        let s = self
            .states
            .get(key)
            .ok_or(ShareStateError::ReadUninitialized)?;
        if s.leader_epoch > leader_epoch {
            return Err(ShareStateError::FencedLeaderEpoch);
        }
        let record = if leader_epoch == s.leader_epoch {
            None
        } else if s.updates_since_snapshot >= per_snapshot {
            Some(ShareStateRecord::Snapshot {
                key: record_key(key),
                value: Some(ShareSnapshot {
                    snapshot_epoch: s.snapshot_epoch + 1,
                    state_epoch: s.state_epoch,
                    leader_epoch,
                    start_offset: s.start_offset,
                    delivery_complete_count: s.delivery_complete_count,
                    create_timestamp: s.create_timestamp,
                    write_timestamp: now_ms,
                    batches: s.batches.clone(),
                }),
            })
        } else {
            Some(ShareStateRecord::Update {
                key: record_key(key),
                value: Some(ShareUpdate {
                    snapshot_epoch: s.snapshot_epoch,
                    leader_epoch,
                    start_offset: s.start_offset,
                    delivery_complete_count: s.delivery_complete_count,
                    batches: Vec::new(),
                }),
            })
        };
        let answer = ReadAnswer {
            state_epoch: s.state_epoch,
            start_offset: s.start_offset,
            batches: s.batches.clone(),
        };
        Ok((answer, record))
    }

    /// ReadShareGroupStateSummary of one share-partition: never fenced,
    /// (0, 0, -1) when not initialized. `known` says whether the metadata
    /// has the topic id and partition. Errors: NegativePartition,
    /// UnknownTopicOrPartition.
    pub fn summary(&self, key: &StateKey, known: bool) -> Result<SummaryAnswer, ShareStateError> {
        if key.2 < 0 {
            return Err(ShareStateError::NegativePartition);
        }
        if !known {
            return Err(ShareStateError::UnknownTopicOrPartition);
        }
        Ok(self.states.get(key).map_or((0, 0, -1), |s| {
            (s.state_epoch, s.leader_epoch, s.start_offset)
        }))
    }

    /// WriteShareGroupState of one share-partition: the record to write, a
    /// ShareUpdate with the request's runs (later runs of the request win
    /// where they overlap), or a whole ShareSnapshot once
    /// `per_snapshot` updates were written since the last one
    /// (`share.coordinator.snapshot.update.records.per.snapshot`). Either
    /// carries the state's leader epoch (a write does not move it; reads
    /// do, as on Kafka 4.4), the start offset in effect (`start_offset` -1
    /// keeps the state's) and the request's DeliveryCompleteCount, else the
    /// state's while the start offset stays (-1, unknown, once it moves), as
    /// Kafka 4.4 writes them. Errors: NegativePartition, NegativeLeaderEpoch,
    /// WriteUninitialized, FencedLeaderEpoch, FencedStateEpoch.
    pub fn write(
        &self,
        key: &StateKey,
        req: &WriteRequest,
        per_snapshot: i32,
        now_ms: i64,
    ) -> Result<ShareStateRecord, ShareStateError> {
        if key.2 < 0 {
            return Err(ShareStateError::NegativePartition);
        }
        if req.leader_epoch < 0 {
            return Err(ShareStateError::NegativeLeaderEpoch);
        }
        let s = self
            .states
            .get(key)
            .ok_or(ShareStateError::WriteUninitialized)?;
        if s.leader_epoch > req.leader_epoch {
            return Err(ShareStateError::FencedLeaderEpoch);
        }
        if s.state_epoch > req.state_epoch {
            return Err(ShareStateError::FencedStateEpoch);
        }
        let start = if req.start_offset == -1 {
            s.start_offset
        } else {
            req.start_offset
        };
        // The count of completed deliveries is relative to the start
        // offset: unknown once it moves, unless the request gives it.
        let complete = if req.delivery_complete_count != -1 {
            req.delivery_complete_count
        } else if start != s.start_offset {
            -1
        } else {
            s.delivery_complete_count
        };
        if s.updates_since_snapshot >= per_snapshot {
            return Ok(ShareStateRecord::Snapshot {
                key: record_key(key),
                value: Some(ShareSnapshot {
                    snapshot_epoch: s.snapshot_epoch + 1,
                    state_epoch: req.state_epoch,
                    leader_epoch: s.leader_epoch,
                    start_offset: start,
                    delivery_complete_count: complete,
                    create_timestamp: s.create_timestamp,
                    write_timestamp: now_ms,
                    batches: merge_batches(&s.batches, &req.batches, start),
                }),
            });
        }
        Ok(ShareStateRecord::Update {
            key: record_key(key),
            value: Some(ShareUpdate {
                snapshot_epoch: s.snapshot_epoch,
                leader_epoch: s.leader_epoch,
                start_offset: start,
                delivery_complete_count: complete,
                batches: merge_batches(&[], &req.batches, start),
            }),
        })
    }

    /// DeleteShareGroupState of one share-partition: the tombstone of its
    /// ShareSnapshot key to write, as Kafka 4.4 writes (none when it is not
    /// initialized; deleting it answers success anyway). `known` as for [`ShareStates::summary`]. Errors:
    /// NegativePartition, UnknownTopicOrPartition.
    pub fn delete(
        &self,
        key: &StateKey,
        known: bool,
    ) -> Result<Vec<ShareStateRecord>, ShareStateError> {
        if key.2 < 0 {
            return Err(ShareStateError::NegativePartition);
        }
        if !known {
            return Err(ShareStateError::UnknownTopicOrPartition);
        }
        if !self.states.contains_key(key) {
            return Ok(Vec::new());
        }
        Ok(vec![ShareStateRecord::Snapshot {
            key: record_key(key),
            value: None,
        }])
    }
}

/// One share-partition of a WriteShareGroupState request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRequest {
    /// The writer's state epoch.
    pub state_epoch: i32,
    /// The writer's (the share-partition leader's) leader epoch.
    pub leader_epoch: i32,
    /// The new start offset, -1 unchanged.
    pub start_offset: i64,
    /// Tagged DeliveryCompleteCount (v1), -1 unknown.
    pub delivery_complete_count: i32,
    /// The runs that changed.
    pub batches: Vec<StateBatch>,
}

/// Merges `new` runs over `current` ones as Kafka's share coordinator does:
/// where they overlap, the later run wins (`new` over `current`, and a
/// later run of `new` over an earlier one); runs below `start_offset` (when
/// not -1) are dropped or cut; adjacent runs with the same state and
/// delivery count are joined. Runs with `last < first` are ignored.
pub fn merge_batches(
    current: &[StateBatch],
    new: &[StateBatch],
    start_offset: i64,
) -> Vec<StateBatch> {
    // first offset → (last offset, state, delivery count), disjoint.
    let mut runs: BTreeMap<i64, (i64, i8, i16)> = BTreeMap::new();
    for b in current.iter().chain(new) {
        if b.last < b.first {
            continue;
        }
        overlay(&mut runs, b.first, b.last);
        runs.insert(b.first, (b.last, b.state, b.delivery_count));
    }
    if start_offset != -1 {
        overlay(&mut runs, i64::MIN, start_offset - 1);
    }
    let mut out: Vec<StateBatch> = Vec::with_capacity(runs.len());
    for (first, (last, state, count)) in runs {
        if let Some(prev) = out.last_mut() {
            if prev.last + 1 == first && prev.state == state && prev.delivery_count == count {
                prev.last = last;
                continue;
            }
        }
        out.push(StateBatch {
            first,
            last,
            state,
            delivery_count: count,
        });
    }
    out
}

/// Removes `first..=last` from `runs` (disjoint), cutting the runs that
/// overlap it: the one starting before `first` that reaches into it and
/// those starting inside it, found in O(log n) each (a window of
/// thousands of runs is merged on every acknowledgement and on every
/// update record replayed at load).
fn overlay(runs: &mut BTreeMap<i64, (i64, i8, i16)>, first: i64, last: i64) {
    if first > last {
        return;
    }
    let before = runs
        .range(..first)
        .next_back()
        .filter(|(_, (l, _, _))| *l >= first)
        .map(|(f, _)| *f);
    let hit: Vec<i64> = before
        .into_iter()
        .chain(runs.range(first..=last).map(|(f, _)| *f))
        .collect();
    for f in hit {
        let Some((l, state, count)) = runs.remove(&f) else {
            continue;
        };
        if f < first {
            runs.insert(f, (first - 1, state, count));
        }
        if l > last {
            runs.insert(last + 1, (l, state, count));
        }
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
