//! Committed offsets as pure functions on the coordinator's state:
//! OffsetCommit, TxnOffsetCommit (pending until the transaction's marker),
//! OffsetFetch, OffsetDelete and retention expiry. Each gives the records to
//! append to `__consumer_offsets` and the per-partition results; the glue
//! appends and then applies the change (`apply_*`), so that the in-memory
//! state follows the log.

use std::collections::HashMap;

use super::error::GroupError;
use super::membership::{check_generation, check_member, GroupCore, OffsetsTopicRecord};
use super::records::{self, OffsetValue};
use super::state::{Group, GroupState};
use super::{subscribed_topics, CommitPartition, FetchedOffset};

/// A group's committed offsets by (topic, partition).
pub type OffsetMap = HashMap<(String, i32), OffsetValue>;

/// Committed offsets, and the offsets open transactions wrote.
#[derive(Debug, Default)]
pub struct OffsetStore {
    /// Committed offsets by group.
    pub committed: HashMap<String, OffsetMap>,
    /// Offsets written by TxnOffsetCommit, by producer id then group, until
    /// the transaction's marker (KIP-98).
    pub pending_txn: HashMap<i64, HashMap<String, OffsetMap>>,
}

impl OffsetStore {
    /// A plain commit of `group`'s offset for `tp` was made: offsets that
    /// open transactions wrote earlier for it must not overwrite it when
    /// they commit (Kafka keeps the record appended last).
    pub fn supersede_pending(&mut self, group: &str, tp: &(String, i32)) {
        for groups in self.pending_txn.values_mut() {
            if let Some(m) = groups.get_mut(group) {
                m.remove(tp);
            }
        }
    }

    /// True when a transaction holds uncommitted offsets of `group` for this
    /// partition.
    pub fn has_pending(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.pending_txn.values().any(|groups| {
            groups
                .get(group)
                .is_some_and(|m| m.contains_key(&(topic.to_string(), partition)))
        })
    }
}

/// An offset commit ready to append.
#[derive(Debug, Default)]
pub struct CommitPlan {
    /// One result per requested partition, in order.
    pub results: Vec<Result<(), GroupError>>,
    /// The offset records to append.
    pub records: Vec<OffsetsTopicRecord>,
    /// The offsets those records carry, for [`GroupCore::apply_commit`].
    pub accepted: Vec<((String, i32), OffsetValue)>,
}

impl CommitPlan {
    /// The append failed with `error`: partitions that were accepted get it.
    pub fn failed(self, error: &GroupError) -> Vec<Result<(), GroupError>> {
        self.results
            .into_iter()
            .map(|r| r.and(Err(error.clone())))
            .collect()
    }
}

/// An OffsetDelete ready to append.
#[derive(Debug, Default)]
pub struct DeletePlan {
    /// One result per requested partition, in order.
    pub results: Vec<Result<(), GroupError>>,
    /// The tombstones to append.
    pub records: Vec<OffsetsTopicRecord>,
    /// The partitions whose offsets go, for [`GroupCore::apply_delete_offsets`].
    pub removed: Vec<(String, i32)>,
}

/// Offsets of one group whose retention passed.
#[derive(Debug, Clone, PartialEq)]
pub struct Expiry {
    /// Group id.
    pub group_id: String,
    /// The expired partitions.
    pub partitions: Vec<(String, i32)>,
    /// True when that is every offset of an Empty group: the group goes too.
    pub whole_group: bool,
}

impl Expiry {
    /// The tombstones to append.
    pub fn records(&self) -> Vec<OffsetsTopicRecord> {
        let mut recs: Vec<OffsetsTopicRecord> = self
            .partitions
            .iter()
            .map(|(t, p)| (records::offset_key(&self.group_id, t, *p), None))
            .collect();
        if self.whole_group {
            recs.push((records::group_key(&self.group_id), None));
        }
        recs
    }
}

/// Kafka's OffsetCommit check (ClassicGroup's offset-commit validation), by
/// state: Dead → COORDINATOR_NOT_AVAILABLE; Empty with generation < 0 → a
/// "simple" commit, accepted; otherwise a commit without member id and
/// generation (< 0) → UNKNOWN_MEMBER_ID; then the member and generation
/// checks; then CompletingRebalance → REBALANCE_IN_PROGRESS and
/// PreparingRebalance / Stable → accepted (the member's session is
/// refreshed).
fn check_commit(
    grp: &mut Group,
    generation: i32,
    member_id: &str,
    instance: &Option<String>,
    now: i64,
) -> Result<(), GroupError> {
    match grp.state {
        GroupState::Dead => return Err(GroupError::CoordinatorNotAvailable),
        GroupState::Empty if generation < 0 => return Ok(()),
        GroupState::Empty
        | GroupState::PreparingRebalance
        | GroupState::CompletingRebalance
        | GroupState::Stable => {}
    }
    if generation < 0 && member_id.is_empty() {
        return Err(GroupError::unknown_member(member_id));
    }
    check_member(grp, member_id, instance)?;
    check_generation(grp, generation)?;
    match grp.state {
        GroupState::CompletingRebalance => Err(GroupError::RebalanceInProgress),
        GroupState::Dead => Err(GroupError::CoordinatorNotAvailable),
        // Unreachable with a known member; as Kafka answers a group that
        // lost its members.
        GroupState::Empty => Err(GroupError::unknown_member(member_id)),
        GroupState::PreparingRebalance | GroupState::Stable => {
            if let Some(m) = grp.members.get_mut(member_id) {
                m.last_heartbeat_ms = now;
            }
            Ok(())
        }
    }
}

/// TxnOffsetCommit's producer checks (KIP-98, KIP-890), made before the
/// group's: a producer epoch older than the one the group's
/// `__consumer_offsets` partition knows (`known_epoch`) is PRODUCER_FENCED;
/// then the verification `begin_txn_commit` noted there must still be
/// there (`take_verification` takes it): a marker written since the
/// transaction coordinator confirmed the transaction ended it, and the
/// commit is INVALID_TXN_STATE. `take_verification` is not called for a
/// fenced producer.
pub fn check_txn_producer(
    producer: (i64, i16),
    known_epoch: Option<i16>,
    take_verification: impl FnOnce() -> bool,
) -> Result<(), GroupError> {
    let (producer_id, producer_epoch) = producer;
    if known_epoch.is_some_and(|e| e > producer_epoch) {
        return Err(GroupError::ProducerFenced {
            producer_id,
            producer_epoch,
        });
    }
    if !take_verification() {
        return Err(GroupError::InvalidTxnState { producer_id });
    }
    Ok(())
}

/// The TxnOffsetCommit check: no member id and generation -1 are accepted
/// whatever the group's state (pre-KIP-447 producers); a member id must be a
/// member, and a generation ≥ 0 must be the current one. Every state but
/// Dead (COORDINATOR_NOT_AVAILABLE) answers the same.
fn check_txn_commit(
    grp: &Group,
    generation: i32,
    member_id: &str,
    instance: &Option<String>,
) -> Result<(), GroupError> {
    match grp.state {
        GroupState::Dead => Err(GroupError::CoordinatorNotAvailable),
        GroupState::Empty
        | GroupState::PreparingRebalance
        | GroupState::CompletingRebalance
        | GroupState::Stable => {
            if !member_id.is_empty() {
                check_member(grp, member_id, instance)?;
            }
            if generation >= 0 {
                check_generation(grp, generation)?;
            }
            Ok(())
        }
    }
}

/// What an OffsetCommit to a group this coordinator does not know answers
/// when it names a generation (>= 0): the group is not created then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnknownGroup {
    /// ILLEGAL_GENERATION (22): OffsetCommit below v9 and TxnOffsetCommit.
    IllegalGeneration,
    /// GROUP_ID_NOT_FOUND (69): OffsetCommit v9 and later (KIP-848; Kafka
    /// 4.x `OffsetMetadataManager.validateOffsetCommit`).
    GroupIdNotFound,
}

impl UnknownGroup {
    /// The answer of OffsetCommit `version`.
    pub fn for_offset_commit(version: i16) -> UnknownGroup {
        if version >= 9 {
            UnknownGroup::GroupIdNotFound
        } else {
            UnknownGroup::IllegalGeneration
        }
    }
}

impl GroupCore {
    /// Plans an OffsetCommit (`producer_id` = `None`) or a TxnOffsetCommit of
    /// `producer_id` (KIP-98): checks the member and generation, then each
    /// partition (its routing error, `offset.metadata.max.bytes`). A
    /// transaction's offsets become pending at once (a marker written while
    /// the append is awaited must find them, as replay of the log would); a
    /// plain commit's take effect with [`GroupCore::apply_commit`] once
    /// appended. `unknown`: the answer when the group does not exist and
    /// `generation` >= 0 (a generation below 0 creates it, as Kafka does
    /// for consumers that manage their own assignment).
    #[allow(clippy::too_many_arguments)]
    pub fn plan_commit(
        &mut self,
        offset_metadata_max_bytes: usize,
        group_id: &str,
        generation: i32,
        member_id: &str,
        instance: &Option<String>,
        partitions: &[CommitPartition],
        producer_id: Option<i64>,
        unknown: UnknownGroup,
        now: i64,
    ) -> CommitPlan {
        let all = |e: GroupError| CommitPlan {
            results: vec![Err(e); partitions.len()],
            ..Default::default()
        };
        if group_id.is_empty() {
            return all(GroupError::InvalidGroupId);
        }
        // A share group (KIP-932) has no committed offsets: Kafka 4.4
        // answers GROUP_ID_NOT_FOUND.
        if self.share.contains(group_id) {
            return all(GroupError::GroupIdNotFound);
        }
        let checked = match producer_id {
            // A consumer group (KIP-848): the member epochs were checked
            // per partition by the caller
            // (`consumer_coordinator::check_commit`), into `p.error`.
            _ if self.consumer.contains(group_id) => Ok(()),
            None => match self.groups.get_mut(group_id) {
                Some(grp) => check_commit(grp, generation, member_id, instance, now),
                // Not relying on Kafka for membership: allowed, and the group
                // exists from now on.
                None if generation < 0 => {
                    self.get_or_create(group_id, now);
                    Ok(())
                }
                None => Err(match unknown {
                    UnknownGroup::IllegalGeneration => GroupError::IllegalGeneration {
                        generation,
                        current: -1,
                    },
                    UnknownGroup::GroupIdNotFound => GroupError::GroupIdNotFound,
                }),
            },
            Some(_) => {
                let grp = self.get_or_create(group_id, now);
                check_txn_commit(grp, generation, member_id, instance)
            }
        };
        if let Err(e) = checked {
            return all(e);
        }
        let mut plan = CommitPlan::default();
        for p in partitions {
            let meta = p.metadata.clone().unwrap_or_default();
            let result = if let Some(e) = &p.error {
                Err(e.clone())
            } else if meta.len() > offset_metadata_max_bytes {
                Err(GroupError::OffsetMetadataTooLarge {
                    size: meta.len(),
                    max: offset_metadata_max_bytes,
                })
            } else {
                let v = OffsetValue {
                    offset: p.offset,
                    leader_epoch: p.leader_epoch,
                    metadata: meta,
                    commit_timestamp: now,
                };
                plan.records.push((
                    records::offset_key(group_id, &p.topic, p.partition),
                    Some(records::offset_value(&v)),
                ));
                plan.accepted.push(((p.topic.clone(), p.partition), v));
                Ok(())
            };
            plan.results.push(result);
        }
        if let Some(pid) = producer_id {
            self.offsets
                .pending_txn
                .entry(pid)
                .or_default()
                .entry(group_id.to_string())
                .or_default()
                .extend(plan.accepted.iter().cloned());
        }
        plan
    }

    /// A plain commit's records were appended: its offsets are committed.
    pub fn apply_commit(&mut self, group_id: &str, accepted: Vec<((String, i32), OffsetValue)>) {
        for (k, _) in &accepted {
            self.offsets.supersede_pending(group_id, k);
        }
        self.offsets
            .committed
            .entry(group_id.to_string())
            .or_default()
            .extend(accepted);
    }

    /// Ends a transaction's offset commits on `__consumer_offsets` partition
    /// `partition` (where its COMMIT/ABORT marker was written, or replayed):
    /// on commit the pending offsets of `producer_id` for groups on that
    /// partition become committed; on abort they are dropped. `partitions`
    /// is `offsets.topic.num.partitions`.
    pub fn complete_txn(
        &mut self,
        producer_id: i64,
        partition: i32,
        partitions: i32,
        commit: bool,
        now: i64,
    ) {
        let done: Vec<(String, OffsetMap)> = {
            let pending = &mut self.offsets.pending_txn;
            let Some(groups) = pending.get_mut(&producer_id) else {
                return;
            };
            let ids: Vec<String> = groups
                .keys()
                .filter(|g| records::partition_for_group(g, partitions) == partition)
                .cloned()
                .collect();
            let done = ids
                .into_iter()
                .filter_map(|g| groups.remove(&g).map(|m| (g, m)))
                .collect();
            if groups.is_empty() {
                pending.remove(&producer_id);
            }
            done
        };
        if !commit {
            return;
        }
        for (group, offsets) in done {
            self.get_or_create(&group, now);
            self.offsets
                .committed
                .entry(group)
                .or_default()
                .extend(offsets);
        }
    }

    /// OffsetFetch: the requested partitions (offset -1 when none is
    /// committed), or every committed offset sorted by topic and partition.
    /// With `require_stable` (v7+, KIP-447) a partition an open transaction
    /// is changing carries UNSTABLE_OFFSET_COMMIT. Answered from the offsets
    /// whatever the group's state (a Dead group has none left).
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        wanted: Option<Vec<(String, i32)>>,
        require_stable: bool,
    ) -> Vec<FetchedOffset> {
        let group = self.offsets.committed.get(group_id);
        let one = |topic: String, partition: i32, v: Option<&OffsetValue>| {
            let error = (require_stable && self.offsets.has_pending(group_id, &topic, partition))
                .then_some(GroupError::UnstableOffsetCommit);
            match v {
                Some(v) => FetchedOffset {
                    topic,
                    partition,
                    offset: v.offset,
                    leader_epoch: v.leader_epoch,
                    metadata: v.metadata.clone(),
                    error,
                },
                None => FetchedOffset {
                    topic,
                    partition,
                    offset: -1,
                    leader_epoch: -1,
                    metadata: String::new(),
                    error,
                },
            }
        };
        match wanted {
            Some(list) => list
                .into_iter()
                .map(|(t, p)| {
                    let v = group.and_then(|g| g.get(&(t.clone(), p)));
                    one(t, p, v)
                })
                .collect(),
            None => {
                let mut all: Vec<FetchedOffset> = group
                    .map(|g| {
                        g.iter()
                            .map(|((t, p), v)| one(t.clone(), *p, Some(v)))
                            .collect()
                    })
                    .unwrap_or_default();
                all.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
                all
            }
        }
    }

    /// Plans an OffsetDelete (KIP-496). Kafka's answers by state: unknown or
    /// Dead → GROUP_ID_NOT_FOUND; Empty → every partition deletable;
    /// PreparingRebalance / CompletingRebalance / Stable → a consumer group's
    /// subscribed topics answer GROUP_SUBSCRIBED_TO_TOPIC, the others are
    /// deletable; a group of another protocol type → NON_EMPTY_GROUP.
    pub fn plan_delete_offsets(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
    ) -> Result<DeletePlan, GroupError> {
        let Some(grp) = self.groups.get(group_id) else {
            return Err(GroupError::GroupIdNotFound);
        };
        let subscribed: Vec<String> = match grp.state {
            GroupState::Dead => return Err(GroupError::GroupIdNotFound),
            GroupState::Empty => Vec::new(),
            GroupState::PreparingRebalance
            | GroupState::CompletingRebalance
            | GroupState::Stable => {
                if grp.protocol_type.as_deref() != Some("consumer") {
                    return Err(GroupError::NonEmptyGroup);
                }
                let protocol = grp.protocol_name.clone().unwrap_or_default();
                grp.members
                    .values()
                    .flat_map(|m| subscribed_topics(&m.metadata_for(&protocol)))
                    .collect()
            }
        };
        Ok(plan_deletes(group_id, partitions, |t| {
            subscribed.iter().any(|s| s == t)
        }))
    }

    /// Plans an OffsetDelete of a consumer group (KIP-848): the topics its
    /// members subscribe to (`subscribed`, by name or regex) answer
    /// GROUP_SUBSCRIBED_TO_TOPIC, the others are deletable, in any state
    /// (Kafka's `ConsumerGroup.validateOffsetDelete` allows every state).
    pub fn plan_delete_consumer_offsets(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
        subscribed: &std::collections::BTreeSet<String>,
    ) -> DeletePlan {
        plan_deletes(group_id, partitions, |t| subscribed.contains(t))
    }

    /// An OffsetDelete's tombstones were appended: the offsets are gone.
    pub fn apply_delete_offsets(&mut self, group_id: &str, removed: &[(String, i32)]) {
        if let Some(m) = self.offsets.committed.get_mut(group_id) {
            for k in removed {
                m.remove(k);
            }
        }
    }

    /// The committed offsets of partitions of the deleted `topics` (names),
    /// per group: Kafka's `OffsetMetadataManager.onPartitionsDeleted`, which
    /// tombstones them in every group, whatever its state, so that a topic
    /// created again under the same name is not read from the old offsets.
    /// As [`Expiry`]s that never remove the group itself.
    pub fn plan_deleted_topics(&self, topics: &std::collections::HashSet<String>) -> Vec<Expiry> {
        let mut out: Vec<Expiry> = self
            .offsets
            .committed
            .iter()
            .filter_map(|(group_id, offs)| {
                let mut partitions: Vec<(String, i32)> = offs
                    .keys()
                    .filter(|(t, _)| topics.contains(t))
                    .cloned()
                    .collect();
                partitions.sort();
                (!partitions.is_empty()).then(|| Expiry {
                    group_id: group_id.clone(),
                    partitions,
                    whole_group: false,
                })
            })
            .collect();
        out.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        out
    }

    /// The offsets whose retention passed at `now`: those of groups Empty
    /// for longer than `retention_ms` (`offsets.retention.minutes`, Kafka
    /// 2.1+ semantics), per commit timestamp for groups that only commit
    /// offsets; an Empty group without offsets goes once it has been Empty
    /// that long.
    pub fn plan_expiry(&self, retention_ms: i64, now: i64) -> Vec<Expiry> {
        self.groups
            .values()
            .filter_map(|g| {
                match g.state {
                    GroupState::Empty => {}
                    GroupState::PreparingRebalance
                    | GroupState::CompletingRebalance
                    | GroupState::Stable
                    | GroupState::Dead => return None,
                }
                let Some(offs) = self
                    .offsets
                    .committed
                    .get(&g.group_id)
                    .filter(|o| !o.is_empty())
                else {
                    let old = now - g.state_timestamp_ms >= retention_ms;
                    return old.then(|| Expiry {
                        group_id: g.group_id.clone(),
                        partitions: Vec::new(),
                        whole_group: true,
                    });
                };
                let mut expired: Vec<(String, i32)> = offs
                    .iter()
                    .filter(|(_, v)| {
                        let base = if g.protocol_type.is_none() {
                            v.commit_timestamp
                        } else {
                            g.state_timestamp_ms
                        };
                        now - base >= retention_ms
                    })
                    .map(|(k, _)| k.clone())
                    .collect();
                expired.sort();
                let whole_group = expired.len() == offs.len();
                (!expired.is_empty()).then(|| Expiry {
                    group_id: g.group_id.clone(),
                    partitions: expired,
                    whole_group,
                })
            })
            .collect()
    }

    /// An expiry's tombstones were appended: its offsets are gone, and so is
    /// the group when it is still Empty with no members. A member that
    /// joined while the tombstones were appended keeps the group (its next
    /// rebalance writes the group's metadata again).
    pub fn apply_expiry(&mut self, e: &Expiry) {
        self.apply_delete_offsets(&e.group_id, &e.partitions);
        let still_empty = self
            .groups
            .get(&e.group_id)
            .is_none_or(|g| g.state == GroupState::Empty && g.members.is_empty());
        if e.whole_group && still_empty {
            self.groups.remove(&e.group_id);
            self.offsets.committed.remove(&e.group_id);
        }
    }
}

/// An OffsetDelete's plan: a partition of a topic `subscribed` says yes to
/// answers GROUP_SUBSCRIBED_TO_TOPIC; the others are tombstoned.
fn plan_deletes(
    group_id: &str,
    partitions: &[(String, i32)],
    subscribed: impl Fn(&str) -> bool,
) -> DeletePlan {
    let mut plan = DeletePlan::default();
    for (t, p) in partitions {
        if subscribed(t) {
            plan.results
                .push(Err(GroupError::GroupSubscribedToTopic { topic: t.clone() }));
        } else {
            plan.records
                .push((records::offset_key(group_id, t, *p), None));
            plan.removed.push((t.clone(), *p));
            plan.results.push(Ok(()));
        }
    }
    plan
}
