//! The classic group protocol on the coordinator shard: JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup, OffsetCommit/Fetch/Delete, DescribeGroups,
//! ListGroups, DeleteGroups. Errors are the ones Kafka returns in each state,
//! so clients recover the way they do against Kafka.
//!
//! Deadlines are glommio timers owned by the shard: one task per member checks
//! its session (sleeping until the next possible expiry), and one per
//! rebalance completes the join at `group.initial.rebalance.delay.ms` /
//! the rebalance timeout. Nothing polls.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_channel::oneshot;
use kafka_protocol::ResponseError as E;

use super::records::{self, GroupValue, OffsetValue, OffsetsRecord, StoredMember};
use super::state::{Group, GroupState, Member};
use super::*;
use crate::shard::internal::{append_records, for_each_record};
use crate::shard::{now_ms, Shard};
use crate::storage::txn_index::parse_control_record;

type GroupRef = Rc<RefCell<Group>>;
type OffsetMap = HashMap<(String, i32), OffsetValue>;

/// Groups and committed offsets of the `__consumer_offsets` partitions this
/// shard owns.
#[derive(Default)]
pub struct GroupCoordinator {
    groups: RefCell<HashMap<String, GroupRef>>,
    offsets: RefCell<HashMap<String, OffsetMap>>,
    /// Offsets written by TxnOffsetCommit, by producer id then group, until
    /// the transaction's marker (KIP-98).
    pending_txn: RefCell<HashMap<i64, HashMap<String, OffsetMap>>>,
    member_seq: std::cell::Cell<u64>,
}

impl GroupCoordinator {
    fn group(&self, id: &str) -> Option<GroupRef> {
        self.groups.borrow().get(id).cloned()
    }

    fn get_or_create(&self, id: &str) -> GroupRef {
        self.groups
            .borrow_mut()
            .entry(id.to_string())
            .or_insert_with(|| Rc::new(RefCell::new(Group::new(id, now_ms()))))
            .clone()
    }

    fn next_seq(&self) -> u64 {
        let n = self.member_seq.get().wrapping_add(1);
        self.member_seq.set(n);
        n
    }

    /// Applies one replayed `__consumer_offsets` record (start-up).
    pub fn replay(&self, record: OffsetsRecord) {
        match record {
            OffsetsRecord::Offset {
                group,
                topic,
                partition,
                value,
            } => {
                let mut offsets = self.offsets.borrow_mut();
                match value {
                    Some(v) => {
                        let tp = (topic, partition);
                        offsets
                            .entry(group.clone())
                            .or_default()
                            .insert(tp.clone(), v);
                        drop(offsets);
                        self.supersede_pending(&group, &tp);
                        self.get_or_create(&group);
                    }
                    None => {
                        if let Some(m) = offsets.get_mut(&group) {
                            m.remove(&(topic, partition));
                        }
                    }
                }
            }
            OffsetsRecord::Group { group, value: None } => {
                self.groups.borrow_mut().remove(&group);
                self.offsets.borrow_mut().remove(&group);
            }
            OffsetsRecord::Group {
                group,
                value: Some(v),
            } => {
                let g = self.get_or_create(&group);
                let mut g = g.borrow_mut();
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
                            last_heartbeat: Instant::now(),
                            awaiting_join: None,
                            awaiting_sync: None,
                            session_epoch: 0,
                        },
                    );
                }
                let state = if g.members.is_empty() {
                    GroupState::Empty
                } else {
                    GroupState::Stable
                };
                g.transition(
                    state,
                    if v.current_state_timestamp > 0 {
                        v.current_state_timestamp
                    } else {
                        now_ms()
                    },
                );
            }
        }
    }

    /// Replays one `__consumer_offsets` partition from its log start to its
    /// log end (start-up, before the shard serves requests). Offsets written
    /// by TxnOffsetCommit (transactional batches) stay pending until their
    /// producer's COMMIT marker, and are dropped at an ABORT marker.
    pub fn load(&self, part: &crate::shard::partition::Partition, offsets_partitions: i32) {
        let mut loaded = 0usize;
        for_each_record(part, |r| {
            let Some(key) = &r.key else { return };
            if r.control {
                if let Some(m) = parse_control_record(key, r.value.as_deref()) {
                    self.complete_txn(r.producer_id, part.index(), offsets_partitions, m.commit);
                }
                return;
            }
            match records::decode(key, r.value.as_ref()) {
                Ok(OffsetsRecord::Offset {
                    group,
                    topic,
                    partition,
                    value: Some(v),
                }) if r.transactional => {
                    self.pending_txn
                        .borrow_mut()
                        .entry(r.producer_id)
                        .or_default()
                        .entry(group)
                        .or_default()
                        .insert((topic, partition), v);
                }
                Ok(rec) => {
                    self.replay(rec);
                    loaded += 1;
                }
                Err(e) => log::warn!(
                    "skipping record at offset {} of {}-{}: {e}",
                    r.offset,
                    part.topic(),
                    part.index()
                ),
            }
        });
        if loaded > 0 {
            log::info!(
                "loaded {loaded} record(s) from {}-{}",
                part.topic(),
                part.index()
            );
        }
    }

    /// Ends a transaction's offset commits on `__consumer_offsets` partition
    /// `partition` (called where its COMMIT/ABORT marker was written, or
    /// replayed): on commit the pending offsets of `producer_id` for groups
    /// on that partition become the committed offsets; on abort they are
    /// dropped. `partitions` is `offsets.topic.num.partitions`.
    pub fn complete_txn(&self, producer_id: i64, partition: i32, partitions: i32, commit: bool) {
        let done: Vec<(String, OffsetMap)> = {
            let mut pending = self.pending_txn.borrow_mut();
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
            self.get_or_create(&group);
            self.offsets
                .borrow_mut()
                .entry(group)
                .or_default()
                .extend(offsets);
        }
    }

    /// A plain commit of `group`'s offset for `tp` was appended: offsets that
    /// open transactions wrote earlier for it must not overwrite it when
    /// they commit (Kafka keeps the record appended last).
    fn supersede_pending(&self, group: &str, tp: &(String, i32)) {
        for groups in self.pending_txn.borrow_mut().values_mut() {
            if let Some(m) = groups.get_mut(group) {
                m.remove(tp);
            }
        }
    }

    /// True when a transaction holds uncommitted offsets of `group` for
    /// this partition (OffsetFetch with `require_stable` answers
    /// UNSTABLE_OFFSET_COMMIT then, KIP-447).
    fn has_pending(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.pending_txn.borrow().values().any(|groups| {
            groups
                .get(group)
                .is_some_and(|m| m.contains_key(&(topic.to_string(), partition)))
        })
    }

    /// After replay: start session timers for members loaded from the log
    /// (they expire unless their consumers heartbeat) and the offsets
    /// retention timer.
    pub fn start(shard: &Rc<Shard>) {
        let groups: Vec<GroupRef> = shard.groups.groups.borrow().values().cloned().collect();
        for g in groups {
            let ids: Vec<String> = g.borrow().members.keys().cloned().collect();
            for id in ids {
                arm_session(shard, &g, &id);
            }
        }
        let me = Rc::downgrade(shard);
        let every = Duration::from_millis(
            shard
                .config
                .group
                .offsets_retention_check_interval_ms
                .max(1),
        );
        crate::shard::stall::spawn_local("offsets retention", async move {
            loop {
                glommio::timer::sleep(every).await;
                let Some(shard) = me.upgrade() else { break };
                expire_offsets(&shard).await;
            }
        })
        .detach();
    }
}

// ---------------------------------------------------------------- persistence

/// Appends `records` (key, value or tombstone) to the group's
/// `__consumer_offsets` partition and waits for the flush policy. Errors with
/// the Kafka code to answer (COORDINATOR_NOT_AVAILABLE when the partition is
/// not here, KAFKA_STORAGE_ERROR on I/O).
async fn write_records(
    shard: &Rc<Shard>,
    group_id: &str,
    records: Vec<(Bytes, Option<Bytes>)>,
    producer: Option<(i64, i16)>,
) -> Result<(), i16> {
    if records.is_empty() {
        return Ok(());
    }
    let p = records::partition_for_group(group_id, shard.config.group.offsets_topic_partitions);
    let Some(part) = shard.partition(OFFSETS_TOPIC, p) else {
        return Err(E::CoordinatorNotAvailable.code());
    };
    append_records(&part, records, producer)
        .await
        .map(|_| ())
        .map_err(|e| crate::error::KafkaCode::code(&e))
}

fn group_record(g: &Group) -> (Bytes, Option<Bytes>) {
    let protocol = g.protocol_name.clone();
    let value = GroupValue {
        protocol_type: g.protocol_type.clone().unwrap_or_default(),
        generation: g.generation,
        protocol: protocol.clone(),
        leader: g.leader.clone(),
        current_state_timestamp: g.state_timestamp_ms,
        members: g
            .members
            .values()
            .map(|m| StoredMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: m.session_timeout_ms,
                subscription: protocol
                    .as_deref()
                    .map(|p| m.metadata_for(p))
                    .unwrap_or_default(),
                assignment: m.assignment.clone(),
            })
            .collect(),
    };
    (
        records::group_key(&g.group_id),
        Some(records::group_value(&value)),
    )
}

fn persist_group_later(shard: &Rc<Shard>, g: &GroupRef) {
    let rec = group_record(&g.borrow());
    let gid = g.borrow().group_id.clone();
    let s = shard.clone();
    crate::shard::stall::spawn_local("group persist", async move {
        if let Err(code) = write_records(&s, &gid, vec![rec], None).await {
            log::warn!("could not persist group {gid}: error {code}");
        }
    })
    .detach();
}

// ---------------------------------------------------------------- timers

/// Starts the session-expiry task of a member. It sleeps until the earliest
/// possible expiry, re-checks the last heartbeat, and removes the member only
/// when `session.timeout.ms` passed without one (not while it waits in a join).
fn arm_session(shard: &Rc<Shard>, g: &GroupRef, member_id: &str) {
    let seq = shard.groups.next_seq();
    let timeout = {
        let mut grp = g.borrow_mut();
        let Some(m) = grp.members.get_mut(member_id) else {
            return;
        };
        m.session_epoch = seq;
        Duration::from_millis(m.session_timeout_ms.max(1) as u64)
    };
    let weak: Weak<RefCell<Group>> = Rc::downgrade(g);
    let me = Rc::downgrade(shard);
    let id = member_id.to_string();
    crate::shard::stall::spawn_local("group session timer", async move {
        let mut wait = timeout;
        loop {
            glommio::timer::sleep(wait).await;
            let (Some(g), Some(shard)) = (weak.upgrade(), me.upgrade()) else {
                return;
            };
            let expired = {
                let grp = g.borrow();
                let Some(m) = grp.members.get(&id) else {
                    return;
                };
                if m.session_epoch != seq {
                    return;
                }
                let deadline = m.last_heartbeat + timeout;
                let now = Instant::now();
                if m.awaiting_join.is_some() || now < deadline {
                    wait = if m.awaiting_join.is_some() {
                        timeout
                    } else {
                        deadline - now
                    };
                    false
                } else {
                    true
                }
            };
            if expired {
                log::info!(
                    "member {id} of group {} expired (no heartbeat within session.timeout.ms)",
                    g.borrow().group_id
                );
                remove_member_and_rebalance(&shard, &g, &id, E::UnknownMemberId.code());
                return;
            }
        }
    })
    .detach();
}

/// PreparingRebalance: cancels pending syncs, schedules the join completion.
fn prepare_rebalance(shard: &Rc<Shard>, g: &GroupRef) {
    let (epoch, not_before, deadline) = {
        let mut grp = g.borrow_mut();
        if grp.state == GroupState::CompletingRebalance {
            for m in grp.members.values_mut() {
                if let Some(tx) = m.awaiting_sync.take() {
                    let _ = tx.send(SyncResult {
                        error_code: E::RebalanceInProgress.code(),
                        ..Default::default()
                    });
                }
            }
        }
        let from_empty = grp.state == GroupState::Empty;
        grp.transition(GroupState::PreparingRebalance, now_ms());
        grp.rebalance_epoch += 1;
        let rebalance_ms = grp.max_rebalance_timeout_ms().max(0) as u64;
        let delay_ms = if from_empty {
            (shard.config.group.initial_rebalance_delay_ms.max(0) as u64).min(rebalance_ms)
        } else {
            0
        };
        let now = Instant::now();
        grp.join_not_before = now + Duration::from_millis(delay_ms);
        (
            grp.rebalance_epoch,
            Duration::from_millis(delay_ms),
            Duration::from_millis(rebalance_ms.max(delay_ms)),
        )
    };
    for (after, force) in [(not_before, false), (deadline, true)] {
        if after.is_zero() && !force {
            continue;
        }
        let weak = Rc::downgrade(g);
        let me = Rc::downgrade(shard);
        crate::shard::stall::spawn_local("group rebalance timer", async move {
            glommio::timer::sleep(after).await;
            if let (Some(g), Some(shard)) = (weak.upgrade(), me.upgrade()) {
                if g.borrow().rebalance_epoch == epoch {
                    try_complete_join(&shard, &g, force);
                }
            }
        })
        .detach();
    }
}

/// Completes the join when every member rejoined (and the initial delay
/// passed), or unconditionally at the rebalance deadline (`force`), removing
/// members that did not rejoin.
fn try_complete_join(shard: &Rc<Shard>, g: &GroupRef, force: bool) {
    {
        let mut grp = g.borrow_mut();
        if grp.state != GroupState::PreparingRebalance {
            return;
        }
        if !force && (Instant::now() < grp.join_not_before || !grp.all_joined()) {
            return;
        }
        let gone: Vec<String> = grp
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none())
            .map(|m| m.member_id.clone())
            .collect();
        for id in gone {
            log::info!(
                "member {id} of group {} did not rejoin in time; removed",
                grp.group_id
            );
            grp.remove_member(&id);
        }
        grp.generation += 1;
        let now = now_ms();
        if grp.members.is_empty() {
            grp.protocol_name = None;
            grp.leader = None;
            grp.transition(GroupState::Empty, now);
        } else {
            grp.protocol_name = grp.select_protocol();
            if grp
                .leader
                .as_ref()
                .is_none_or(|l| !grp.members.contains_key(l))
            {
                grp.leader = grp.members.keys().next().cloned();
            }
            grp.transition(GroupState::CompletingRebalance, now);
            let protocol = grp.protocol_name.clone().unwrap_or_default();
            let leader = grp.leader.clone().unwrap_or_default();
            let all: Vec<(String, Option<String>, Bytes)> = grp
                .members
                .values()
                .map(|m| {
                    (
                        m.member_id.clone(),
                        m.group_instance_id.clone(),
                        m.metadata_for(&protocol),
                    )
                })
                .collect();
            let (generation, ptype) = (grp.generation, grp.protocol_type.clone());
            for m in grp.members.values_mut() {
                m.last_heartbeat = Instant::now();
                if let Some(tx) = m.awaiting_join.take() {
                    let _ = tx.send(JoinResult {
                        error_code: 0,
                        generation_id: generation,
                        protocol_type: ptype.clone(),
                        protocol_name: Some(protocol.clone()),
                        leader: leader.clone(),
                        member_id: m.member_id.clone(),
                        members: if m.member_id == leader {
                            all.clone()
                        } else {
                            Vec::new()
                        },
                        skip_assignment: false,
                    });
                }
            }
        }
    }
    if g.borrow().state == GroupState::Empty {
        persist_group_later(shard, g);
    }
}

/// Removes a member (answering its parked requests with `code`) and moves the
/// group on: a rebalance from Stable/CompletingRebalance, a join completion
/// check from PreparingRebalance.
fn remove_member_and_rebalance(shard: &Rc<Shard>, g: &GroupRef, member_id: &str, code: i16) {
    let state = {
        let mut grp = g.borrow_mut();
        if let Some(mut m) = grp.remove_member(member_id) {
            if let Some(tx) = m.awaiting_join.take() {
                let _ = tx.send(JoinResult::error(code, member_id));
            }
            if let Some(tx) = m.awaiting_sync.take() {
                let _ = tx.send(SyncResult {
                    error_code: code,
                    ..Default::default()
                });
            }
        }
        grp.state
    };
    match state {
        GroupState::Stable | GroupState::CompletingRebalance => prepare_rebalance(shard, g),
        GroupState::PreparingRebalance => try_complete_join(shard, g, false),
        GroupState::Empty | GroupState::Dead => {}
    }
}

// ---------------------------------------------------------------- JoinGroup

fn new_member(args: &JoinArgs, member_id: &str) -> Member {
    Member {
        member_id: member_id.to_string(),
        group_instance_id: args.group_instance_id.clone(),
        client_id: args.client_id.clone(),
        client_host: args.client_host.clone(),
        session_timeout_ms: args.session_timeout_ms,
        rebalance_timeout_ms: args.rebalance_timeout_ms,
        protocol_type: args.protocol_type.clone(),
        protocols: args.protocols.clone(),
        assignment: Bytes::new(),
        last_heartbeat: Instant::now(),
        awaiting_join: None,
        awaiting_sync: None,
        session_epoch: 0,
    }
}

fn current_join_result(grp: &Group, member_id: &str) -> JoinResult {
    let protocol = grp.protocol_name.clone().unwrap_or_default();
    let leader = grp.leader.clone().unwrap_or_default();
    JoinResult {
        error_code: 0,
        generation_id: grp.generation,
        protocol_type: grp.protocol_type.clone(),
        protocol_name: grp.protocol_name.clone(),
        leader: leader.clone(),
        member_id: member_id.to_string(),
        members: if member_id == leader {
            grp.members
                .values()
                .map(|m| {
                    (
                        m.member_id.clone(),
                        m.group_instance_id.clone(),
                        m.metadata_for(&protocol),
                    )
                })
                .collect()
        } else {
            Vec::new()
        },
        skip_assignment: false,
    }
}

enum JoinStep {
    Answer(JoinResult),
    Park {
        member_id: String,
        rebalance: bool,
        arm: bool,
    },
}

/// Handles a JoinGroup on the coordinator shard; resolves when the member's
/// join completes (possibly after a rebalance).
pub async fn join(shard: Rc<Shard>, args: JoinArgs) -> JoinResult {
    let cfg = &shard.config.group;
    if args.group_id.is_empty() {
        return JoinResult::error(E::InvalidGroupId.code(), &args.member_id);
    }
    if args.session_timeout_ms < cfg.min_session_timeout_ms
        || args.session_timeout_ms > cfg.max_session_timeout_ms
    {
        return JoinResult::error(E::InvalidSessionTimeout.code(), &args.member_id);
    }
    let g = if args.member_id.is_empty() {
        shard.groups.get_or_create(&args.group_id)
    } else {
        match shard.groups.group(&args.group_id) {
            Some(g) => g,
            None => return JoinResult::error(E::UnknownMemberId.code(), &args.member_id),
        }
    };
    let (tx, rx) = oneshot::channel();
    let step = {
        let mut grp = g.borrow_mut();
        join_step(&mut grp, &args, tx, cfg.max_size)
    };
    match step {
        JoinStep::Answer(r) => {
            if r.error_code == E::MemberIdRequired.code() {
                // KIP-394: the id handed out stays pending until the member
                // joins with it, or for one session timeout.
                let weak = Rc::downgrade(&g);
                let id = r.member_id.clone();
                let timeout = Duration::from_millis(args.session_timeout_ms.max(1) as u64);
                crate::shard::stall::spawn_local("group join timer", async move {
                    glommio::timer::sleep(timeout).await;
                    if let Some(g) = weak.upgrade() {
                        g.borrow_mut().pending_members.remove(&id);
                    }
                })
                .detach();
            }
            if r.error_code == 0 && args.member_id.is_empty() {
                // A static member replaced its old id without a rebalance:
                // watch its session and persist the new id.
                arm_session(&shard, &g, &r.member_id);
                persist_group_later(&shard, &g);
            }
            r
        }
        JoinStep::Park {
            member_id,
            rebalance,
            arm,
        } => {
            if arm {
                arm_session(&shard, &g, &member_id);
            }
            if rebalance {
                let state = g.borrow().state;
                if state != GroupState::PreparingRebalance {
                    prepare_rebalance(&shard, &g);
                }
            }
            try_complete_join(&shard, &g, false);
            rx.await
                .unwrap_or_else(|_| JoinResult::error(E::UnknownMemberId.code(), &member_id))
        }
    }
}

fn join_step(
    grp: &mut Group,
    args: &JoinArgs,
    tx: oneshot::Sender<JoinResult>,
    max_size: usize,
) -> JoinStep {
    let err = |code: i16| JoinStep::Answer(JoinResult::error(code, &args.member_id));
    if grp.state == GroupState::Dead {
        return err(E::CoordinatorNotAvailable.code());
    }
    if !grp.supports(&args.protocol_type, &args.protocols) {
        return err(E::InconsistentGroupProtocol.code());
    }
    if args.member_id.is_empty() {
        let new_id = format!("{}-{}", args.client_id, uuid::Uuid::new_v4());
        if let Some(instance) = &args.group_instance_id {
            if let Some(old_id) = grp.static_members.get(instance).cloned() {
                return static_rejoin(grp, args, &old_id, &new_id, tx);
            }
        } else if args.require_known_member_id {
            grp.pending_members.insert(new_id.clone(), Instant::now());
            return JoinStep::Answer(JoinResult::error(E::MemberIdRequired.code(), &new_id));
        }
        if grp.members.len() >= max_size {
            return err(E::GroupMaxSizeReached.code());
        }
        add_member(grp, args, &new_id, tx);
        return JoinStep::Park {
            member_id: new_id,
            rebalance: true,
            arm: true,
        };
    }
    let id = args.member_id.clone();
    if grp.pending_members.remove(&id).is_some() {
        if grp.members.len() >= max_size {
            return err(E::GroupMaxSizeReached.code());
        }
        add_member(grp, args, &id, tx);
        return JoinStep::Park {
            member_id: id,
            rebalance: true,
            arm: true,
        };
    }
    let Some(member) = grp.members.get(&id) else {
        if let Some(i) = &args.group_instance_id {
            if grp.static_members.contains_key(i) {
                return err(E::FencedInstanceId.code());
            }
        }
        return err(E::UnknownMemberId.code());
    };
    if member.group_instance_id != args.group_instance_id {
        return err(E::FencedInstanceId.code());
    }
    let same = member.same_protocols(&args.protocols);
    let is_leader = grp.leader.as_deref() == Some(id.as_str());
    match grp.state {
        GroupState::Empty | GroupState::Dead => err(E::UnknownMemberId.code()),
        GroupState::PreparingRebalance => {
            update_member(grp, args, tx);
            JoinStep::Park {
                member_id: id,
                rebalance: false,
                arm: false,
            }
        }
        GroupState::CompletingRebalance if same => JoinStep::Answer(current_join_result(grp, &id)),
        GroupState::Stable if same && !is_leader => JoinStep::Answer(current_join_result(grp, &id)),
        GroupState::CompletingRebalance | GroupState::Stable => {
            update_member(grp, args, tx);
            JoinStep::Park {
                member_id: id,
                rebalance: true,
                arm: false,
            }
        }
    }
}

fn add_member(grp: &mut Group, args: &JoinArgs, id: &str, tx: oneshot::Sender<JoinResult>) {
    if grp.members.is_empty() {
        grp.protocol_type = Some(args.protocol_type.clone());
    }
    let mut m = new_member(args, id);
    m.awaiting_join = Some(tx);
    if let Some(i) = &args.group_instance_id {
        grp.static_members.insert(i.clone(), id.to_string());
    }
    grp.members.insert(id.to_string(), m);
}

fn update_member(grp: &mut Group, args: &JoinArgs, tx: oneshot::Sender<JoinResult>) {
    if let Some(m) = grp.members.get_mut(&args.member_id) {
        m.protocols = args.protocols.clone();
        m.session_timeout_ms = args.session_timeout_ms;
        m.rebalance_timeout_ms = args.rebalance_timeout_ms;
        m.last_heartbeat = Instant::now();
        if let Some(old) = m.awaiting_join.replace(tx) {
            let _ = old.send(JoinResult::error(
                E::UnknownMemberId.code(),
                &args.member_id,
            ));
        }
    }
}

/// KIP-345: a known `group.instance.id` rejoins with a new member id. The old
/// id is fenced; a Stable group with unchanged protocols keeps its assignment
/// and generation (no rebalance).
fn static_rejoin(
    grp: &mut Group,
    args: &JoinArgs,
    old_id: &str,
    new_id: &str,
    tx: oneshot::Sender<JoinResult>,
) -> JoinStep {
    let Some(mut old) = grp.members.shift_remove(old_id) else {
        grp.static_members
            .remove(args.group_instance_id.as_deref().unwrap_or_default());
        add_member(grp, args, new_id, tx);
        return JoinStep::Park {
            member_id: new_id.to_string(),
            rebalance: true,
            arm: true,
        };
    };
    if let Some(t) = old.awaiting_join.take() {
        let _ = t.send(JoinResult::error(E::FencedInstanceId.code(), old_id));
    }
    if let Some(t) = old.awaiting_sync.take() {
        let _ = t.send(SyncResult {
            error_code: E::FencedInstanceId.code(),
            ..Default::default()
        });
    }
    let same = old.same_protocols(&args.protocols);
    let mut m = new_member(args, new_id);
    m.assignment = old.assignment.clone();
    grp.members.insert(new_id.to_string(), m);
    if let Some(i) = &args.group_instance_id {
        grp.static_members.insert(i.clone(), new_id.to_string());
    }
    if grp.leader.as_deref() == Some(old_id) {
        grp.leader = Some(new_id.to_string());
    }
    // Kafka's rule for a static member rejoining a Stable group: no
    // rebalance when the protocol the next generation would select is the
    // current one. The metadata bytes may differ (a restarted Java consumer
    // sends its owned partitions and generation in them); the member keeps
    // its old assignment either way.
    let selected_unchanged =
        grp.protocol_name.is_some() && grp.select_protocol() == grp.protocol_name;
    match grp.state {
        GroupState::Stable if same || selected_unchanged => {
            let mut r = current_join_result(grp, new_id);
            // The leader need not recompute the assignment (KIP-814).
            r.skip_assignment = r.leader == new_id;
            JoinStep::Answer(r)
        }
        GroupState::PreparingRebalance => {
            if let Some(m) = grp.members.get_mut(new_id) {
                m.awaiting_join = Some(tx);
            }
            JoinStep::Park {
                member_id: new_id.to_string(),
                rebalance: false,
                arm: true,
            }
        }
        _ => {
            if let Some(m) = grp.members.get_mut(new_id) {
                m.awaiting_join = Some(tx);
            }
            JoinStep::Park {
                member_id: new_id.to_string(),
                rebalance: true,
                arm: true,
            }
        }
    }
}

// ---------------------------------------------------------------- SyncGroup

fn check_member(grp: &Group, member_id: &str, instance: &Option<String>) -> Result<(), i16> {
    match grp.members.get(member_id) {
        None => {
            if let Some(i) = instance {
                if grp.static_members.contains_key(i) {
                    return Err(E::FencedInstanceId.code());
                }
            }
            Err(E::UnknownMemberId.code())
        }
        Some(m) if &m.group_instance_id != instance => Err(E::FencedInstanceId.code()),
        Some(_) => Ok(()),
    }
}

/// Handles a SyncGroup; the leader's call distributes the assignment.
pub async fn sync(shard: Rc<Shard>, args: SyncArgs) -> SyncResult {
    let err = |code: i16| SyncResult {
        error_code: code,
        ..Default::default()
    };
    let Some(g) = shard.groups.group(&args.group_id) else {
        return err(E::UnknownMemberId.code());
    };
    let (tx, rx) = oneshot::channel();
    let leader_sync = {
        let mut grp = g.borrow_mut();
        if grp.state == GroupState::Dead {
            return err(E::CoordinatorNotAvailable.code());
        }
        if let Err(c) = check_member(&grp, &args.member_id, &args.group_instance_id) {
            return err(c);
        }
        if args.generation_id != grp.generation {
            return err(E::IllegalGeneration.code());
        }
        if args
            .protocol_type
            .as_ref()
            .is_some_and(|t| grp.protocol_type.as_ref() != Some(t))
            || args
                .protocol_name
                .as_ref()
                .is_some_and(|n| grp.protocol_name.as_ref() != Some(n))
        {
            return err(E::InconsistentGroupProtocol.code());
        }
        match grp.state {
            GroupState::Empty | GroupState::Dead => return err(E::UnknownMemberId.code()),
            GroupState::PreparingRebalance => return err(E::RebalanceInProgress.code()),
            GroupState::Stable => {
                let m = grp
                    .members
                    .get(&args.member_id)
                    .map(|m| m.assignment.clone())
                    .unwrap_or_default();
                return SyncResult {
                    error_code: 0,
                    protocol_type: grp.protocol_type.clone(),
                    protocol_name: grp.protocol_name.clone(),
                    assignment: m,
                };
            }
            GroupState::CompletingRebalance => {}
        }
        if let Some(m) = grp.members.get_mut(&args.member_id) {
            m.last_heartbeat = Instant::now();
            if let Some(old) = m.awaiting_sync.replace(tx) {
                let _ = old.send(err(E::UnknownMemberId.code()));
            }
        }
        if grp.leader.as_deref() == Some(args.member_id.as_str()) {
            let assignments: HashMap<String, Bytes> = args.assignments.into_iter().collect();
            for m in grp.members.values_mut() {
                m.assignment = assignments.get(&m.member_id).cloned().unwrap_or_default();
            }
            Some((grp.generation, group_record(&grp)))
        } else {
            None
        }
    };
    if let Some((generation, record)) = leader_sync {
        let stored = write_records(&shard, &args.group_id, vec![record], None).await;
        let mut grp = g.borrow_mut();
        if grp.state == GroupState::CompletingRebalance && grp.generation == generation {
            let (ptype, pname) = (grp.protocol_type.clone(), grp.protocol_name.clone());
            match stored {
                Ok(()) => {
                    grp.transition(GroupState::Stable, now_ms());
                    for m in grp.members.values_mut() {
                        if let Some(t) = m.awaiting_sync.take() {
                            let _ = t.send(SyncResult {
                                error_code: 0,
                                protocol_type: ptype.clone(),
                                protocol_name: pname.clone(),
                                assignment: m.assignment.clone(),
                            });
                        }
                    }
                }
                Err(code) => {
                    for m in grp.members.values_mut() {
                        m.assignment = Bytes::new();
                        if let Some(t) = m.awaiting_sync.take() {
                            let _ = t.send(err(code));
                        }
                    }
                    drop(grp);
                    prepare_rebalance(&shard, &g);
                }
            }
        }
    }
    rx.await
        .unwrap_or_else(|_| err(E::RebalanceInProgress.code()))
}

// ---------------------------------------------------------------- Heartbeat / LeaveGroup

/// Handles a Heartbeat; gives the Kafka error code.
pub fn heartbeat(
    shard: &Rc<Shard>,
    group_id: &str,
    generation: i32,
    member_id: &str,
    instance: &Option<String>,
) -> i16 {
    let Some(g) = shard.groups.group(group_id) else {
        return E::UnknownMemberId.code();
    };
    let mut grp = g.borrow_mut();
    if grp.state == GroupState::Dead {
        return E::CoordinatorNotAvailable.code();
    }
    if grp.state == GroupState::Empty {
        return E::UnknownMemberId.code();
    }
    if let Err(c) = check_member(&grp, member_id, instance) {
        return c;
    }
    if generation != grp.generation {
        return E::IllegalGeneration.code();
    }
    if let Some(m) = grp.members.get_mut(member_id) {
        m.last_heartbeat = Instant::now();
    }
    match grp.state {
        GroupState::PreparingRebalance => E::RebalanceInProgress.code(),
        _ => 0,
    }
}

/// Handles a LeaveGroup; gives (top-level error, per-member errors).
pub fn leave(
    shard: &Rc<Shard>,
    group_id: &str,
    members: Vec<LeavingMember>,
) -> (i16, Vec<(LeavingMember, i16)>) {
    let Some(g) = shard.groups.group(group_id) else {
        let out = members
            .into_iter()
            .map(|m| (m, E::UnknownMemberId.code()))
            .collect();
        return (E::UnknownMemberId.code(), out);
    };
    let mut out = Vec::new();
    for lm in members {
        let target = {
            let mut grp = g.borrow_mut();
            if grp.pending_members.remove(&lm.member_id).is_some() {
                out.push((lm, 0));
                continue;
            }
            let resolved = match &lm.group_instance_id {
                Some(i) => match grp.static_members.get(i) {
                    Some(id) if lm.member_id.is_empty() || *id == lm.member_id => Ok(id.clone()),
                    Some(_) => Err(E::FencedInstanceId.code()),
                    None => Err(E::UnknownMemberId.code()),
                },
                None if grp.members.contains_key(&lm.member_id) => Ok(lm.member_id.clone()),
                None => Err(E::UnknownMemberId.code()),
            };
            resolved
        };
        match target {
            Ok(id) => {
                log::info!("member {id} left group {group_id}");
                remove_member_and_rebalance(shard, &g, &id, E::UnknownMemberId.code());
                out.push((lm, 0));
            }
            Err(c) => out.push((lm, c)),
        }
    }
    (0, out)
}

// ---------------------------------------------------------------- offsets

/// Checks that a commit may be made for `group_id` by this member and
/// generation (generation -1 with no member id: a "simple" commit, allowed
/// for groups without members). Gives the Kafka error code otherwise.
fn check_commit(
    shard: &Rc<Shard>,
    group_id: &str,
    generation: i32,
    member_id: &str,
    instance: &Option<String>,
) -> Result<(), i16> {
    if group_id.is_empty() {
        return Err(E::InvalidGroupId.code());
    }
    let g = match shard.groups.group(group_id) {
        Some(g) => g,
        None if generation < 0 => shard.groups.get_or_create(group_id),
        None => return Err(E::IllegalGeneration.code()),
    };
    let mut grp = g.borrow_mut();
    match grp.state {
        GroupState::Dead => Err(E::CoordinatorNotAvailable.code()),
        _ if generation < 0 && member_id.is_empty() => {
            if grp.state != GroupState::Empty {
                return Err(E::UnknownMemberId.code());
            }
            Ok(())
        }
        _ => {
            check_member(&grp, member_id, instance)?;
            if generation != grp.generation {
                return Err(E::IllegalGeneration.code());
            }
            if grp.state == GroupState::CompletingRebalance {
                return Err(E::RebalanceInProgress.code());
            }
            if let Some(m) = grp.members.get_mut(member_id) {
                m.last_heartbeat = Instant::now();
            }
            Ok(())
        }
    }
}

/// Kafka's checks for TxnOffsetCommit: no member id and generation -1 are
/// accepted whatever the group's state (pre-KIP-447 producers); a member id
/// must be a member, and a generation ≥ 0 must be the current one.
fn check_txn_commit(
    shard: &Rc<Shard>,
    group_id: &str,
    generation: i32,
    member_id: &str,
    instance: &Option<String>,
) -> Result<(), i16> {
    if group_id.is_empty() {
        return Err(E::InvalidGroupId.code());
    }
    let g = shard.groups.get_or_create(group_id);
    let grp = g.borrow();
    if grp.state == GroupState::Dead {
        return Err(E::CoordinatorNotAvailable.code());
    }
    if !member_id.is_empty() {
        check_member(&grp, member_id, instance)?;
    }
    if generation >= 0 && generation != grp.generation {
        return Err(E::IllegalGeneration.code());
    }
    Ok(())
}

/// Handles an OffsetCommit; gives one error code per partition, in order.
pub async fn commit(
    shard: Rc<Shard>,
    group_id: String,
    generation: i32,
    member_id: String,
    instance: Option<String>,
    partitions: Vec<CommitPartition>,
) -> Vec<i16> {
    commit_offsets(
        shard, group_id, generation, member_id, instance, partitions, None,
    )
    .await
}

/// First step of a TxnOffsetCommit, before the transaction coordinator is
/// asked: notes on the group's `__consumer_offsets` partition that (producer
/// id, epoch) is being verified, so that [`txn_commit`] can tell whether the
/// transaction's marker was written in between (Kafka's VerificationGuard,
/// KIP-890). Errors with COORDINATOR_NOT_AVAILABLE when the partition is not
/// on this shard.
pub fn begin_txn_commit(
    shard: &Rc<Shard>,
    group_id: &str,
    producer: (i64, i16),
) -> Result<(), i16> {
    let p = records::partition_for_group(group_id, shard.config.group.offsets_topic_partitions);
    let part = shard
        .partition(OFFSETS_TOPIC, p)
        .ok_or(E::CoordinatorNotAvailable.code())?;
    part.begin_txn_verification(producer.0, producer.1);
    Ok(())
}

/// Handles a TxnOffsetCommit (KIP-98, KIP-447): the offsets are written to
/// `__consumer_offsets` as a transactional batch of `producer` (id, epoch)
/// and become the group's committed offsets only when the transaction's
/// COMMIT marker is written there (see [`GroupCoordinator::complete_txn`]).
/// A producer epoch older than the one the partition knows gives
/// PRODUCER_FENCED. Gives one error code per partition, in order.
pub async fn txn_commit(
    shard: Rc<Shard>,
    group_id: String,
    producer: (i64, i16),
    generation: i32,
    member_id: String,
    instance: Option<String>,
    partitions: Vec<CommitPartition>,
) -> Vec<i16> {
    let p = records::partition_for_group(&group_id, shard.config.group.offsets_topic_partitions);
    if let Some(part) = shard.partition(OFFSETS_TOPIC, p) {
        let known = part.producer_epoch(producer.0);
        if known.is_some_and(|e| e > producer.1) {
            return vec![E::ProducerFenced.code(); partitions.len()];
        }
        // The coordinator confirmed the transaction after
        // `begin_txn_commit`; a marker written here since then ended it.
        if !part.take_txn_verification(producer.0, producer.1) {
            return vec![E::InvalidTxnState.code(); partitions.len()];
        }
    }
    commit_offsets(
        shard,
        group_id,
        generation,
        member_id,
        instance,
        partitions,
        Some(producer),
    )
    .await
}

async fn commit_offsets(
    shard: Rc<Shard>,
    group_id: String,
    generation: i32,
    member_id: String,
    instance: Option<String>,
    partitions: Vec<CommitPartition>,
    producer: Option<(i64, i16)>,
) -> Vec<i16> {
    let checked = match producer {
        None => check_commit(&shard, &group_id, generation, &member_id, &instance),
        Some(_) => check_txn_commit(&shard, &group_id, generation, &member_id, &instance),
    };
    if let Err(code) = checked {
        return vec![code; partitions.len()];
    }
    let max_meta = shard.config.group.offset_metadata_max_bytes;
    let ts = now_ms();
    let mut codes = Vec::with_capacity(partitions.len());
    let mut records = Vec::new();
    let mut accepted = Vec::new();
    for p in &partitions {
        let meta = p.metadata.clone().unwrap_or_default();
        let code = if p.error_code != 0 {
            p.error_code
        } else if meta.len() > max_meta {
            E::OffsetMetadataTooLarge.code()
        } else {
            let v = OffsetValue {
                offset: p.offset,
                leader_epoch: p.leader_epoch,
                metadata: meta,
                commit_timestamp: ts,
            };
            records.push((
                records::offset_key(&group_id, &p.topic, p.partition),
                Some(records::offset_value(&v)),
            ));
            accepted.push(((p.topic.clone(), p.partition), v));
            0
        };
        codes.push(code);
    }
    // Transactional offsets become pending before the write is awaited: the
    // append itself happens before the first await, and a marker written
    // while a flush is awaited must find them (as replay of the log would).
    if let Some((pid, _)) = producer {
        let mut pending = shard.groups.pending_txn.borrow_mut();
        let m = pending
            .entry(pid)
            .or_default()
            .entry(group_id.clone())
            .or_default();
        m.extend(accepted.iter().cloned());
    }
    if let Err(code) = write_records(&shard, &group_id, records, producer).await {
        return codes
            .into_iter()
            .map(|c| if c == 0 { code } else { c })
            .collect();
    }
    if producer.is_none() {
        for (k, _) in &accepted {
            shard.groups.supersede_pending(&group_id, k);
        }
        let mut offsets = shard.groups.offsets.borrow_mut();
        let m = offsets.entry(group_id).or_default();
        m.extend(accepted);
    }
    codes
}

/// Committed offsets of a group: the requested partitions, or all of them.
/// With `require_stable` (OffsetFetch v7+, KIP-447) a partition whose offset
/// an open transaction is changing carries UNSTABLE_OFFSET_COMMIT.
pub fn fetch_offsets(
    shard: &Rc<Shard>,
    group_id: &str,
    wanted: Option<Vec<(String, i32)>>,
    require_stable: bool,
) -> Vec<FetchedOffset> {
    let offsets = shard.groups.offsets.borrow();
    let group = offsets.get(group_id);
    let one = |topic: String, partition: i32, v: Option<&OffsetValue>| {
        let error_code = if require_stable && shard.groups.has_pending(group_id, &topic, partition)
        {
            E::UnstableOffsetCommit.code()
        } else {
            0
        };
        match v {
            Some(v) => FetchedOffset {
                topic,
                partition,
                offset: v.offset,
                leader_epoch: v.leader_epoch,
                metadata: v.metadata.clone(),
                error_code,
            },
            None => FetchedOffset {
                topic,
                partition,
                offset: -1,
                leader_epoch: -1,
                metadata: String::new(),
                error_code,
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

/// OffsetDelete: removes committed offsets of partitions the group is not
/// subscribed to. Gives (top-level error, per-partition errors).
pub async fn delete_offsets(
    shard: Rc<Shard>,
    group_id: String,
    partitions: Vec<(String, i32)>,
) -> (i16, Vec<i16>) {
    let Some(g) = shard.groups.group(&group_id) else {
        return (E::GroupIdNotFound.code(), Vec::new());
    };
    let subscribed: Vec<String> = {
        let grp = g.borrow();
        if grp.state == GroupState::Dead {
            return (E::GroupIdNotFound.code(), Vec::new());
        }
        let protocol = grp.protocol_name.clone().unwrap_or_default();
        if grp.protocol_type.as_deref() == Some("consumer") {
            grp.members
                .values()
                .flat_map(|m| subscribed_topics(&m.metadata_for(&protocol)))
                .collect()
        } else if grp.members.is_empty() {
            Vec::new()
        } else {
            return (E::NonEmptyGroup.code(), Vec::new());
        }
    };
    let mut codes = Vec::new();
    let mut records = Vec::new();
    let mut removed = Vec::new();
    for (t, p) in &partitions {
        if subscribed.contains(t) {
            codes.push(E::GroupSubscribedToTopic.code());
        } else {
            records.push((records::offset_key(&group_id, t, *p), None));
            removed.push((t.clone(), *p));
            codes.push(0);
        }
    }
    if let Err(code) = write_records(&shard, &group_id, records, None).await {
        return (code, Vec::new());
    }
    if let Some(m) = shard.groups.offsets.borrow_mut().get_mut(&group_id) {
        for k in removed {
            m.remove(&k);
        }
    }
    (0, codes)
}

// ---------------------------------------------------------------- admin

/// DescribeGroups for one group.
pub fn describe(shard: &Rc<Shard>, group_id: &str) -> GroupDescription {
    let Some(g) = shard.groups.group(group_id) else {
        return GroupDescription {
            group_id: group_id.to_string(),
            state: "Dead".into(),
            ..Default::default()
        };
    };
    let grp = g.borrow();
    let protocol = grp.protocol_name.clone().unwrap_or_default();
    GroupDescription {
        error_code: 0,
        group_id: group_id.to_string(),
        state: grp.state.as_str().to_string(),
        protocol_type: grp.protocol_type.clone().unwrap_or_default(),
        protocol: if grp.state == GroupState::Stable || grp.state == GroupState::CompletingRebalance
        {
            protocol.clone()
        } else {
            String::new()
        },
        members: grp
            .members
            .values()
            .map(|m| DescribedMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                metadata: m.metadata_for(&protocol),
                assignment: if grp.state == GroupState::Stable {
                    m.assignment.clone()
                } else {
                    Bytes::new()
                },
            })
            .collect(),
    }
}

/// ListGroups on this shard, filtered by state names (case-insensitive,
/// KIP-518) and protocol types (KIP-848's types filter; "classic" matches).
pub fn list(shard: &Rc<Shard>, states: &[String], types: &[String]) -> Vec<ListedGroup> {
    let groups = shard.groups.groups.borrow();
    let mut out: Vec<ListedGroup> = groups
        .values()
        .filter_map(|g| {
            let g = g.borrow();
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
            })
        })
        .collect();
    out.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    out
}

/// DeleteGroups for one group: only an Empty group (NON_EMPTY_GROUP
/// otherwise); writes tombstones for its offsets and metadata.
pub async fn delete_group(shard: Rc<Shard>, group_id: String) -> i16 {
    let Some(g) = shard.groups.group(&group_id) else {
        return E::GroupIdNotFound.code();
    };
    match g.borrow().state {
        GroupState::Dead => return E::GroupIdNotFound.code(),
        GroupState::Empty => {}
        _ => return E::NonEmptyGroup.code(),
    }
    let mut records: Vec<(Bytes, Option<Bytes>)> = shard
        .groups
        .offsets
        .borrow()
        .get(&group_id)
        .map(|m| {
            m.keys()
                .map(|(t, p)| (records::offset_key(&group_id, t, *p), None))
                .collect()
        })
        .unwrap_or_default();
    records.push((records::group_key(&group_id), None));
    if let Err(code) = write_records(&shard, &group_id, records, None).await {
        return code;
    }
    g.borrow_mut().transition(GroupState::Dead, now_ms());
    shard.groups.groups.borrow_mut().remove(&group_id);
    shard.groups.offsets.borrow_mut().remove(&group_id);
    log::info!("group {group_id} deleted");
    0
}

/// Expires the offsets of groups that have been Empty for longer than
/// `offsets.retention.minutes` (Kafka 2.1+ semantics; groups that only commit
/// offsets expire per offset by commit timestamp).
async fn expire_offsets(shard: &Rc<Shard>) {
    let retention = shard.config.group.offsets_retention_ms;
    let now = now_ms();
    // (group, expired partitions, whether that is every offset of the group)
    type Expiry = (String, Vec<(String, i32)>, bool);
    let candidates: Vec<Expiry> = {
        let groups = shard.groups.groups.borrow();
        let offsets = shard.groups.offsets.borrow();
        groups
            .values()
            .filter_map(|g| {
                let g = g.borrow();
                if g.state != GroupState::Empty {
                    return None;
                }
                let Some(offs) = offsets.get(&g.group_id).filter(|o| !o.is_empty()) else {
                    // An Empty group without offsets goes once it has been
                    // Empty for the retention period (Kafka marks it Dead).
                    let old = now - g.state_timestamp_ms >= retention;
                    return old.then(|| (g.group_id.clone(), Vec::new(), true));
                };
                let expired: Vec<(String, i32)> = offs
                    .iter()
                    .filter(|(_, v)| {
                        let base = if g.protocol_type.is_none() {
                            v.commit_timestamp
                        } else {
                            g.state_timestamp_ms
                        };
                        now - base >= retention
                    })
                    .map(|(k, _)| k.clone())
                    .collect();
                let all = expired.len() == offs.len();
                (!expired.is_empty()).then(|| (g.group_id.clone(), expired, all))
            })
            .collect()
    };
    for (gid, parts, all) in candidates {
        let mut recs: Vec<(Bytes, Option<Bytes>)> = parts
            .iter()
            .map(|(t, p)| (records::offset_key(&gid, t, *p), None))
            .collect();
        if all {
            recs.push((records::group_key(&gid), None));
        }
        if write_records(shard, &gid, recs, None).await.is_ok() {
            log::info!(
                "expired {} committed offset(s) of group {gid}{}",
                parts.len(),
                if all { "; group removed" } else { "" }
            );
            if let Some(m) = shard.groups.offsets.borrow_mut().get_mut(&gid) {
                for k in &parts {
                    m.remove(k);
                }
            }
            if all {
                shard.groups.groups.borrow_mut().remove(&gid);
                shard.groups.offsets.borrow_mut().remove(&gid);
            }
        }
    }
}
