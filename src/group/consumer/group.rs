//! One consumer group: its epochs, members, target assignment and who
//! holds which partition; the records that describe each change.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use regex::Regex;
use uuid::Uuid;

use super::assignor::{self, AssignInput};
use super::reconcile::{plain, Current, MemberState, Owned};
use super::records::{ConsumerRecord, CurrentMemberAssignment, MemberMetadata, TopicPartitions};
use super::{Assignment, ConsumerGroupState, TopicInfo, TopicsView};

/// Kafka's epoch of a static member that left temporarily (-2).
pub(super) const LEAVE_STATIC_EPOCH: i32 = -2;

/// One member.
#[derive(Debug, Clone, Default)]
pub(super) struct Member {
    /// Subscription and client data (record 5).
    pub meta: MemberMetadata,
    /// Reconciliation standing (record 8).
    pub current: Current,
    /// When the session expires (ms since the epoch); None until armed.
    pub session_deadline: Option<i64>,
    /// When an unacknowledged revocation fences the member (ms).
    pub rebalance_deadline: Option<i64>,
}

/// One consumer group.
#[derive(Debug, Clone)]
pub(super) struct Group {
    /// Group epoch (record 3).
    pub epoch: i32,
    /// Hash of the subscribed topics' metadata (record 3).
    pub metadata_hash: i64,
    /// Epoch of the target assignment (record 6).
    pub assignment_epoch: i32,
    /// When the target was computed (ms, record 6).
    pub assignment_ts: i64,
    /// Members by id.
    pub members: BTreeMap<String, Member>,
    /// Target assignment by member id (record 7).
    pub targets: BTreeMap<String, Assignment>,
    /// Static instance id → member id.
    pub instances: HashMap<String, String>,
    /// Which member holds (assigned or pending revocation) a partition.
    pub holders: HashMap<(Uuid, i32), String>,
    /// `group.consumer.assignors` as last configured.
    pub assignors: Vec<String>,
    /// `group.consumer.assignment.interval.ms` as last configured (ms).
    pub assignment_interval_ms: i64,
    /// Compiled subscription regexes (anchored: the whole name matches).
    regexes: HashMap<String, Option<Regex>>,
    /// Each regex the members subscribe with and the topics it matched when
    /// last written (record 16).
    pub resolved: BTreeMap<String, BTreeSet<String>>,
}

impl Group {
    /// An empty group at epoch 0.
    pub(super) fn new(assignors: Vec<String>) -> Group {
        Group {
            epoch: 0,
            metadata_hash: 0,
            assignment_epoch: 0,
            assignment_ts: 0,
            members: BTreeMap::new(),
            targets: BTreeMap::new(),
            instances: HashMap::new(),
            holders: HashMap::new(),
            assignors,
            assignment_interval_ms: 0,
            regexes: HashMap::new(),
            resolved: BTreeMap::new(),
        }
    }

    /// A group created by its first member's heartbeat: at epoch 1 with an
    /// empty target assignment of epoch 1, as Kafka 4.3+ creates it
    /// (KIP-1263), so the first member's assignment is epoch 2.
    pub(super) fn created(assignors: Vec<String>) -> Group {
        let mut g = Group::new(assignors);
        g.epoch = 1;
        g.assignment_epoch = 1;
        g
    }

    /// Takes `group.consumer.assignors` from `cfg` (copied only when it
    /// changed).
    pub(super) fn configure(&mut self, cfg: &super::ConsumerGroupConfig) {
        if self.assignors != cfg.assignors {
            self.assignors = cfg.assignors.clone();
        }
        self.assignment_interval_ms = cfg.assignment_interval_ms;
    }

    /// Whether the target may be computed now (KIP-1263 batching): the
    /// group epoch is ahead of it and `group.consumer.assignment.interval.ms`
    /// passed since it was last computed.
    pub(super) fn assignment_due(&self, now: i64) -> bool {
        self.epoch > self.assignment_epoch
            && now.saturating_sub(self.assignment_ts) >= self.assignment_interval_ms
    }

    /// The group's state as ConsumerGroupDescribe/ListGroups show it.
    pub(super) fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self.members.values().any(|m| {
            m.current.epoch != self.assignment_epoch || m.current.state != MemberState::Stable
        }) {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    /// The assignor the members ask for most (ties by configured order);
    /// the first configured when none asks.
    pub(super) fn assignor_name(&self) -> String {
        let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(name) = &m.meta.server_assignor {
                if let Some(pos) = self.assignors.iter().position(|a| a == name) {
                    *counts.entry(pos).or_default() += 1;
                }
            }
        }
        let best = counts
            .iter()
            .max_by_key(|(pos, n)| (**n, std::cmp::Reverse(**pos)))
            .map(|(pos, _)| *pos);
        match best.or(if self.assignors.is_empty() {
            None
        } else {
            Some(0)
        }) {
            Some(pos) => self.assignors[pos].clone(),
            None => assignor::UNIFORM.to_string(),
        }
    }

    /// Replaces `member_id`'s standing, keeping `holders` in step.
    pub(super) fn set_current(&mut self, member_id: &str, current: Current) {
        let Some(m) = self.members.get_mut(member_id) else {
            return;
        };
        release(&mut self.holders, member_id, &m.current);
        for (t, ps) in &current.assigned {
            for p in ps.keys() {
                self.holders.insert((*t, *p), member_id.to_string());
            }
        }
        for (t, ps) in &current.pending {
            for p in ps {
                self.holders.insert((*t, *p), member_id.to_string());
            }
        }
        m.current = current;
    }

    /// Removes a member with Kafka's tombstones (8, 7, 5 in that order).
    pub(super) fn remove_member(
        &mut self,
        group_id: &str,
        member_id: &str,
        records: &mut Vec<ConsumerRecord>,
    ) {
        self.drop_member(member_id);
        self.targets.remove(member_id);
        member_tombstones(group_id, member_id, records);
    }

    /// Forgets a member (its partitions and instance id), no records.
    pub(super) fn drop_member(&mut self, member_id: &str) {
        if let Some(m) = self.members.remove(member_id) {
            release(&mut self.holders, member_id, &m.current);
            if let Some(inst) = &m.meta.instance_id {
                if self.instances.get(inst).is_some_and(|id| id == member_id) {
                    self.instances.remove(inst);
                }
            }
        }
    }

    /// Each member's subscribed existing topics (names and regex matches),
    /// the topics, and the hash of their metadata.
    pub(super) fn subscriptions(
        &mut self,
        topics: &dyn TopicsView,
    ) -> (
        BTreeMap<String, BTreeSet<String>>,
        BTreeMap<String, TopicInfo>,
        i64,
    ) {
        let mut all_names: Option<Vec<String>> = None;
        let mut subs = BTreeMap::new();
        let mut infos: BTreeMap<String, TopicInfo> = BTreeMap::new();
        for (id, m) in &self.members {
            let mut set = BTreeSet::new();
            for name in &m.meta.subscribed_topic_names {
                if let Some(info) = lookup(&mut infos, topics, name) {
                    set.insert(info);
                }
            }
            if let Some(re) = &m.meta.subscribed_topic_regex {
                let compiled = self
                    .regexes
                    .entry(re.clone())
                    .or_insert_with(|| Regex::new(&format!("^(?:{re})$")).ok());
                if let Some(compiled) = compiled {
                    let names = all_names.get_or_insert_with(|| topics.names());
                    for name in names.iter().filter(|n| compiled.is_match(n)) {
                        if let Some(info) = lookup(&mut infos, topics, name) {
                            set.insert(info);
                        }
                    }
                }
            }
            subs.insert(id.clone(), set);
        }
        let hash = metadata_hash(&infos);
        (subs, infos, hash)
    }

    /// Bumps the group epoch (record 3) and computes the new target when
    /// it is due ([`Group::assignment_due`]); otherwise a later heartbeat
    /// computes it.
    pub(super) fn bump(
        &mut self,
        group_id: &str,
        topics: &dyn TopicsView,
        now: i64,
        records: &mut Vec<ConsumerRecord>,
    ) {
        self.record_regexes(group_id, topics, now, records);
        let (subs, infos, hash) = self.subscriptions(topics);
        self.epoch += 1;
        crate::metrics::coordinator::count(crate::metrics::coordinator::Event::ConsumerRebalance);
        self.metadata_hash = hash;
        records.push(ConsumerRecord::GroupMetadata {
            group_id: group_id.to_string(),
            value: Some((self.epoch, hash)),
        });
        if self.assignment_due(now) {
            self.assign_with(group_id, &subs, &infos, now, records);
        }
    }

    /// Writes record 16 for each subscribed regex whose matching topics
    /// changed (with the image's version and `now`), and its tombstone for
    /// each regex no member subscribes with any more, as Kafka 4.4 keeps
    /// its resolved regexes.
    fn record_regexes(
        &mut self,
        group_id: &str,
        topics: &dyn TopicsView,
        now: i64,
        records: &mut Vec<ConsumerRecord>,
    ) {
        let used: BTreeSet<String> = self
            .members
            .values()
            .filter_map(|m| m.meta.subscribed_topic_regex.clone())
            .collect();
        let gone: Vec<String> = self
            .resolved
            .keys()
            .filter(|r| !used.contains(*r))
            .cloned()
            .collect();
        for regex in gone {
            self.resolved.remove(&regex);
            records.push(ConsumerRecord::RegularExpression {
                group_id: group_id.to_string(),
                regex,
                value: None,
            });
        }
        if used.is_empty() {
            return;
        }
        let names = topics.names();
        for regex in used {
            let compiled = self
                .regexes
                .entry(regex.clone())
                .or_insert_with(|| Regex::new(&format!("^(?:{regex})$")).ok());
            let Some(compiled) = compiled else {
                continue;
            };
            let matched: BTreeSet<String> = names
                .iter()
                .filter(|n| compiled.is_match(n))
                .cloned()
                .collect();
            if self.resolved.get(&regex) != Some(&matched) {
                records.push(ConsumerRecord::RegularExpression {
                    group_id: group_id.to_string(),
                    regex: regex.clone(),
                    value: Some((matched.iter().cloned().collect(), topics.version(), now)),
                });
                self.resolved.insert(regex, matched);
            }
        }
    }

    /// Computes the target at the group epoch (records 7 for members whose
    /// target changed, then 6).
    pub(super) fn assign(
        &mut self,
        group_id: &str,
        topics: &dyn TopicsView,
        now: i64,
        records: &mut Vec<ConsumerRecord>,
    ) {
        let (subs, infos, _) = self.subscriptions(topics);
        self.assign_with(group_id, &subs, &infos, now, records);
    }

    fn assign_with(
        &mut self,
        group_id: &str,
        subs: &BTreeMap<String, BTreeSet<String>>,
        infos: &BTreeMap<String, TopicInfo>,
        now: i64,
        records: &mut Vec<ConsumerRecord>,
    ) {
        let name = self.assignor_name();
        let input = AssignInput {
            subscriptions: subs,
            topics: infos,
            previous: &self.targets,
        };
        let targets = assignor::assign(&name, &input);
        for (member_id, target) in targets {
            if self.targets.get(&member_id) != Some(&target) {
                records.push(ConsumerRecord::TargetAssignmentMember {
                    group_id: group_id.to_string(),
                    member_id: member_id.clone(),
                    value: Some(to_parts(&target)),
                });
                self.targets.insert(member_id, target);
            }
        }
        self.assignment_epoch = self.epoch;
        self.assignment_ts = now;
        records.push(ConsumerRecord::TargetAssignmentMetadata {
            group_id: group_id.to_string(),
            value: Some((self.epoch, now)),
        });
    }
}

/// A member's tombstones in Kafka's order (8, 7, 5).
pub(super) fn member_tombstones(
    group_id: &str,
    member_id: &str,
    records: &mut Vec<ConsumerRecord>,
) {
    records.push(ConsumerRecord::CurrentMemberAssignment {
        group_id: group_id.to_string(),
        member_id: member_id.to_string(),
        value: None,
    });
    records.push(ConsumerRecord::TargetAssignmentMember {
        group_id: group_id.to_string(),
        member_id: member_id.to_string(),
        value: None,
    });
    records.push(ConsumerRecord::MemberMetadata {
        group_id: group_id.to_string(),
        member_id: member_id.to_string(),
        value: None,
    });
}

fn lookup(
    infos: &mut BTreeMap<String, TopicInfo>,
    topics: &dyn TopicsView,
    name: &str,
) -> Option<String> {
    if infos.contains_key(name) {
        return Some(name.to_string());
    }
    let info = topics.by_name(name)?;
    infos.insert(name.to_string(), info);
    Some(name.to_string())
}

fn release(holders: &mut HashMap<(Uuid, i32), String>, member_id: &str, current: &Current) {
    let parts = current
        .assigned
        .iter()
        .flat_map(|(t, ps)| ps.keys().map(move |p| (*t, *p)))
        .chain(
            current
                .pending
                .iter()
                .flat_map(|(t, ps)| ps.iter().map(move |p| (*t, *p))),
        );
    for key in parts {
        if holders.get(&key).is_some_and(|h| h == member_id) {
            holders.remove(&key);
        }
    }
}

/// FNV-1a (64 bits) over the subscribed topics' names, ids and partition
/// counts in name order: a change of any bumps the group epoch.
fn metadata_hash(infos: &BTreeMap<String, TopicInfo>) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for (name, info) in infos {
        feed(name.as_bytes());
        feed(&[0]);
        feed(info.id.as_bytes());
        feed(&info.partitions.to_be_bytes());
    }
    h as i64
}

/// An assignment as a record's topic partitions (empty topics left out).
pub(super) fn to_parts(a: &Assignment) -> Vec<TopicPartitions> {
    a.iter()
        .filter(|(_, ps)| !ps.is_empty())
        .map(|(t, ps)| TopicPartitions {
            topic_id: *t,
            partitions: ps.iter().copied().collect(),
            assignment_epochs: None,
        })
        .collect()
}

/// A record's topic partitions as an assignment.
pub(super) fn from_parts(parts: &[TopicPartitions]) -> Assignment {
    let mut a = Assignment::new();
    for tp in parts {
        if !tp.partitions.is_empty() {
            a.entry(tp.topic_id)
                .or_default()
                .extend(tp.partitions.iter().copied());
        }
    }
    a
}

/// A member's standing as record 8's value (assignment epochs included).
pub(super) fn current_value(c: &Current) -> CurrentMemberAssignment {
    CurrentMemberAssignment {
        member_epoch: c.epoch,
        previous_member_epoch: c.previous_epoch,
        state: c.state.code(),
        assigned: c
            .assigned
            .iter()
            .filter(|(_, ps)| !ps.is_empty())
            .map(|(t, ps)| TopicPartitions {
                topic_id: *t,
                partitions: ps.keys().copied().collect(),
                assignment_epochs: Some(ps.values().copied().collect()),
            })
            .collect(),
        pending_revocation: to_parts(&c.pending),
    }
}

/// Record 8's value as a member's standing; partitions without assignment
/// epochs count as assigned at the member epoch.
pub(super) fn current_from(v: &CurrentMemberAssignment) -> Current {
    let mut assigned: Owned = BTreeMap::new();
    for tp in &v.assigned {
        let epochs = tp
            .assignment_epochs
            .as_ref()
            .filter(|e| e.len() == tp.partitions.len());
        let slot = assigned.entry(tp.topic_id).or_default();
        for (i, p) in tp.partitions.iter().enumerate() {
            let e = epochs
                .and_then(|e| e.get(i).copied())
                .unwrap_or(v.member_epoch);
            slot.insert(*p, e);
        }
    }
    assigned.retain(|_, ps| !ps.is_empty());
    Current {
        epoch: v.member_epoch,
        previous_epoch: v.previous_member_epoch,
        state: MemberState::from_code(v.state),
        assigned,
        pending: from_parts(&v.pending_revocation),
    }
}

/// Record 8 for `member_id`'s standing.
pub(super) fn current_record(group_id: &str, member_id: &str, c: &Current) -> ConsumerRecord {
    ConsumerRecord::CurrentMemberAssignment {
        group_id: group_id.to_string(),
        member_id: member_id.to_string(),
        value: Some(current_value(c)),
    }
}

/// The assigned partitions of a standing, without epochs.
pub(super) fn assigned_plain(c: &Current) -> Assignment {
    plain(&c.assigned)
}
