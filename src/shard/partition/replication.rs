//! One partition's replication state on its owner shard: what the leader
//! knows of each follower (Kafka's `Replica` state: its LEO and when it was
//! last caught up), the ISR as the metadata image holds it and the change
//! sent to the controller, the high watermark (the smallest LEO over the
//! ISR) and the acks=all wait on it; a follower's high watermark is the
//! leader's, at most its own LEO. See docs/ARCHITECTURE.md, "Replication".
//!
//! The rules are Kafka's (`Partition.updateFollowerFetchState`,
//! `maybeExpandIsr`, `maybeShrinkIsr`, `maybeIncrementLeaderHW`):
//!
//! - a follower is caught up at a fetch whose offset reaches the leader's
//!   LEO, or reaches the LEO the leader had at the follower's previous fetch
//!   (it was caught up then);
//! - the high watermark moves up to the smallest LEO over the *maximal* ISR
//!   (the ISR with a pending expansion's new member: a member being added
//!   counts at once, a member being removed still counts until the change is
//!   committed), never down while this replica leads;
//! - an ISR member not caught up for `replica.lag.time.max.ms` is proposed
//!   for removal; a follower outside the ISR whose LEO reaches the high
//!   watermark and the start of the current leader epoch is proposed for
//!   addition. A proposal is an AlterPartition-shaped [`IsrChange`] guarded
//!   by the partition epoch; it takes effect when the image brings it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::Partition;
use crate::cluster::metadata::PartitionRegistration;
use crate::shard::error::ReplicationWaitError;

/// A follower as its leader sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerState {
    /// Its LEO as its last fetch told (the fetch offset); -1 before its
    /// first fetch under this leadership.
    pub log_end_offset: i64,
    /// Broker time (ms) it was last caught up with the leader's LEO.
    pub last_caught_up_ms: i64,
    /// Broker time (ms) of its last fetch.
    last_fetch_ms: i64,
    /// The leader's LEO at its last fetch.
    last_fetch_leader_leo: i64,
}

/// An ISR change a leader asks the controller for (AlterPartition,
/// KIP-497): applied only if the partition's leader epoch and partition
/// epoch are still these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrChange {
    /// The topic's id.
    pub topic_id: Uuid,
    /// Topic name (for logs).
    pub topic: std::sync::Arc<str>,
    /// Partition index.
    pub partition: i32,
    /// The leader epoch the leader leads in.
    pub leader_epoch: i32,
    /// The partition epoch the change starts from.
    pub partition_epoch: i32,
    /// The ISR asked for.
    pub new_isr: Vec<i32>,
}

/// The replication bookkeeping of one partition (see the module docs).
#[derive(Debug, Default)]
pub struct Replication {
    /// This broker's id.
    node: i32,
    /// Every replica, from the image.
    replicas: Vec<i32>,
    /// The replicas an ongoing reassignment adds (KIP-455), from the image.
    adding: Vec<i32>,
    /// The ISR, from the image (committed).
    isr: Vec<i32>,
    /// The partition epoch of the image's registration.
    partition_epoch: i32,
    /// An ISR change sent to the controller and not answered or applied yet.
    pending: Option<Vec<i32>>,
    /// Per follower (leader only).
    followers: BTreeMap<i32, FollowerState>,
    /// The LEO when this replica became leader of the current epoch (a
    /// follower rejoins the ISR only once it reaches it).
    epoch_start_offset: i64,
}

impl Replication {
    /// Whether the partition has more than one replica (its high watermark
    /// then moves by replication, not by each commit).
    fn replicated(&self) -> bool {
        self.replicas.len() > 1
    }

    /// The ISR with a pending change's members added (Kafka's maximal ISR).
    fn maximal_isr(&self) -> Vec<i32> {
        let mut m = self.isr.clone();
        for r in self.pending.iter().flatten() {
            if !m.contains(r) {
                m.push(*r);
            }
        }
        m
    }
}

impl Partition {
    /// Takes this broker's id, the partition's registration from a newly
    /// applied image and the broker time (ms): sets leadership and leader
    /// epoch, the replicas and the ISR; a new leadership (or leader epoch)
    /// starts every follower as unknown and caught up now (Kafka resets the
    /// followers' state when it becomes leader); a pending ISR change ends
    /// when the image holds another partition epoch. Wakes acks=all waiters
    /// and long-polling fetches (leadership or ISR may have changed what
    /// they wait for).
    pub fn set_registration(
        self: &std::rc::Rc<Self>,
        node: i32,
        reg: &PartitionRegistration,
        now_ms: i64,
    ) {
        let leads = reg.is_leader(node);
        let new_term = leads && (!self.is_leader() || self.leader_epoch() != reg.leader_epoch);
        self.set_leadership(leads, reg.leader_epoch);
        let leo = self.log_end_offset();
        {
            let mut r = self.replication.borrow_mut();
            r.node = node;
            if r.partition_epoch != reg.partition_epoch || r.isr != reg.isr {
                r.pending = None;
            }
            r.replicas = reg.replicas.clone();
            r.adding = reg.adding_replicas.clone();
            r.isr = reg.isr.clone();
            r.partition_epoch = reg.partition_epoch;
            let replicated = r.replicated();
            self.log.borrow_mut().set_replicated(replicated);
            if new_term {
                r.epoch_start_offset = leo;
                r.followers.clear();
            }
            if leads {
                let others: Vec<i32> = reg
                    .replicas
                    .iter()
                    .copied()
                    .filter(|b| *b != node)
                    .collect();
                r.followers.retain(|b, _| others.contains(b));
                for b in others {
                    r.followers.entry(b).or_insert(FollowerState {
                        log_end_offset: -1,
                        last_caught_up_ms: now_ms,
                        last_fetch_ms: 0,
                        last_fetch_leader_leo: -1,
                    });
                }
            } else {
                r.followers.clear();
            }
        }
        if new_term {
            // Kafka `Partition.makeLeader`: the new epoch starts at the LEO
            // in the epoch cache at once, so a follower that asks about an
            // epoch this leader never wrote learns where it diverges.
            if let Err(e) = self.assign_epoch_start_offset(reg.leader_epoch) {
                log::warn!(
                    "{}-{}: leader epoch {} not recorded: {e}",
                    self.topic,
                    self.index,
                    reg.leader_epoch
                );
            }
        }
        if leads {
            self.maybe_advance_high_watermark();
        }
        self.appended.notify_all();
    }

    /// Gives the size of the ISR as the image holds it (1 for a partition
    /// with one replica): what NOT_ENOUGH_REPLICAS compares with
    /// `min.insync.replicas`.
    pub fn isr_size(&self) -> usize {
        let r = self.replication.borrow();
        if r.replicated() {
            r.isr.len()
        } else {
            1
        }
    }

    /// Gives the replication factor: the replicas without those an ongoing
    /// reassignment is adding, as Kafka counts it for UnderReplicatedPartitions
    /// (1 before the first image).
    pub fn replica_count(&self) -> usize {
        let r = self.replication.borrow();
        r.replicas
            .iter()
            .filter(|b| !r.adding.contains(b))
            .count()
            .max(1)
    }

    /// Gives the ISR as the image holds it.
    pub fn isr(&self) -> Vec<i32> {
        self.replication.borrow().isr.clone()
    }

    /// Whether the partition has more than one replica.
    pub fn is_replicated(&self) -> bool {
        self.replication.borrow().replicated()
    }

    /// Gives what this leader knows of follower `broker`, if it is one.
    pub fn follower_state(&self, broker: i32) -> Option<FollowerState> {
        self.replication.borrow().followers.get(&broker).copied()
    }

    /// Leader: moves the high watermark up to the smallest LEO over the
    /// maximal ISR (this replica's LEO included); gives whether it moved
    /// (and wakes the waiters). A partition with one replica, or a
    /// follower, moves nothing here. While the committed ISR is below the
    /// effective `min.insync.replicas` (at most the replica count) the high
    /// watermark stays (KIP-966's strict min ISR rule: what the controller
    /// keeps in the ELR then holds every committed record).
    pub fn maybe_advance_high_watermark(&self) -> bool {
        if !self.is_leader() {
            return false;
        }
        let min_isr =
            usize::try_from(self.settings.borrow().min_insync_replicas.max(1)).unwrap_or(1);
        let target = {
            let r = self.replication.borrow();
            if !r.replicated() || r.isr.len() < min_isr.min(r.replicas.len()) {
                return false;
            }
            let mut hw = self.log_end_offset();
            for b in r.maximal_isr() {
                if b == r.node {
                    continue;
                }
                let leo = r.followers.get(&b).map_or(-1, |f| f.log_end_offset);
                hw = hw.min(leo);
            }
            hw
        };
        let moved = {
            let mut log = self.log.borrow_mut();
            if target > log.high_watermark() {
                log.set_high_watermark(target);
                true
            } else {
                false
            }
        };
        if moved {
            self.appended.notify_all();
        }
        moved
    }

    /// Leader: whether `broker` is one of this partition's followers (a
    /// replica other than this broker).
    pub fn has_follower(&self, broker: i32) -> bool {
        self.replication.borrow().followers.contains_key(&broker)
    }

    /// Leader: takes a follower's fetch (its broker id and fetch offset,
    /// which is its LEO) at broker time `now_ms` (ms) and whether the
    /// follower is alive in the image (not fenced nor shutting down);
    /// updates its state and the high watermark and gives the ISR expansion
    /// to propose when the follower is outside the ISR and has caught up
    /// (its LEO reaches the high watermark and the start of this leader
    /// epoch), none while another change is pending. A fetch from a broker
    /// that is not a follower of this partition changes nothing.
    pub fn follower_fetched(
        &self,
        broker: i32,
        fetch_offset: i64,
        alive: bool,
        now_ms: i64,
    ) -> Option<IsrChange> {
        if !self.is_leader() {
            return None;
        }
        let leo = self.log_end_offset();
        {
            let mut r = self.replication.borrow_mut();
            let f = r.followers.get_mut(&broker)?;
            if fetch_offset >= leo {
                f.last_caught_up_ms = f.last_caught_up_ms.max(now_ms);
            } else if f.last_fetch_leader_leo >= 0 && fetch_offset >= f.last_fetch_leader_leo {
                f.last_caught_up_ms = f.last_caught_up_ms.max(f.last_fetch_ms);
            }
            f.last_fetch_leader_leo = leo;
            f.last_fetch_ms = now_ms;
            f.log_end_offset = fetch_offset;
        }
        self.maybe_advance_high_watermark();
        let hw = self.high_watermark();
        let mut r = self.replication.borrow_mut();
        if !alive || r.pending.is_some() || r.isr.contains(&broker) {
            return None;
        }
        if fetch_offset < hw || fetch_offset < r.epoch_start_offset {
            return None;
        }
        let mut new_isr = r.isr.clone();
        new_isr.push(broker);
        Some(self.propose_isr(&mut r, new_isr))
    }

    /// Leader: takes the broker time (ms) and `replica.lag.time.max.ms`;
    /// gives the ISR shrink to propose when an ISR follower has not been
    /// caught up for longer than that (Kafka `getOutOfSyncReplicas`), none
    /// while another change is pending. The removed members still count
    /// for the high watermark until the change is committed.
    pub fn isr_shrink(&self, now_ms: i64, lag_ms: u64) -> Option<IsrChange> {
        if !self.is_leader() {
            return None;
        }
        let mut r = self.replication.borrow_mut();
        if !r.replicated() || r.pending.is_some() {
            return None;
        }
        let lag = i64::try_from(lag_ms).unwrap_or(i64::MAX);
        let node = r.node;
        let out: Vec<i32> = r
            .isr
            .iter()
            .copied()
            .filter(|b| *b != node)
            .filter(|b| {
                r.followers
                    .get(b)
                    .is_none_or(|f| now_ms.saturating_sub(f.last_caught_up_ms) > lag)
            })
            .collect();
        if out.is_empty() {
            return None;
        }
        let new_isr: Vec<i32> = r.isr.iter().copied().filter(|b| !out.contains(b)).collect();
        Some(self.propose_isr(&mut r, new_isr))
    }

    /// Marks `new_isr` pending and gives the change to send for it.
    fn propose_isr(&self, r: &mut Replication, new_isr: Vec<i32>) -> IsrChange {
        r.pending = Some(new_isr.clone());
        IsrChange {
            topic_id: self.topic_id,
            topic: self.topic.clone(),
            partition: self.index,
            leader_epoch: self.leader_epoch(),
            partition_epoch: r.partition_epoch,
            new_isr,
        }
    }

    /// The controller refused or did not answer an ISR change: forget it so
    /// that the next check may propose again.
    pub fn isr_change_failed(&self, change: &IsrChange) {
        let mut r = self.replication.borrow_mut();
        if r.pending.as_ref() == Some(&change.new_isr) {
            r.pending = None;
        }
    }

    /// Follower: takes the leader's high watermark from a fetch response;
    /// this replica's becomes it, at most its own LEO.
    pub fn set_follower_high_watermark(&self, leader_hw: i64) {
        if self.is_leader() {
            return;
        }
        let moved = {
            let mut log = self.log.borrow_mut();
            let before = log.high_watermark();
            log.set_high_watermark(leader_hw) != before
        };
        if moved {
            self.appended.notify_all();
        }
    }

    /// acks=all: takes the offset after the batch and a deadline; resolves
    /// once the high watermark reaches it (every ISR member holds the
    /// batch). Errors: `NotEnoughReplicasAfterAppend` when it is reached
    /// with the ISR below `min.insync.replicas` (Kafka's
    /// NOT_ENOUGH_REPLICAS_AFTER_APPEND (20)), `TimedOut` at the deadline
    /// (the produce's `timeout_ms`: REQUEST_TIMED_OUT (7)), `NotLeader`
    /// when this replica stops leading meanwhile (NOT_LEADER_OR_FOLLOWER
    /// (6)). A partition with one replica resolves at once (its high
    /// watermark is its LEO).
    pub async fn wait_replicated(
        &self,
        offset: i64,
        deadline: Instant,
    ) -> Result<(), ReplicationWaitError> {
        self.wait_replicated_timed(offset, deadline).await.1
    }

    /// As [`Partition::wait_replicated`], also giving the time spent
    /// waiting for the followers (zero when the high watermark had already
    /// passed `offset`: no clock is read then).
    pub async fn wait_replicated_timed(
        &self,
        offset: i64,
        deadline: Instant,
    ) -> (Duration, Result<(), ReplicationWaitError>) {
        let mut waiting_since: Option<Instant> = None;
        let result = loop {
            let g = self.appended.generation();
            if !self.is_leader() {
                break Err(ReplicationWaitError::NotLeader);
            }
            if self.high_watermark() >= offset || !self.is_replicated() {
                let required = self.settings().min_insync_replicas;
                let isr = self.isr_size();
                if usize::try_from(required).is_ok_and(|m| m > isr) {
                    break Err(ReplicationWaitError::NotEnoughReplicasAfterAppend {
                        required,
                        isr,
                    });
                }
                break Ok(());
            }
            let now = Instant::now();
            waiting_since.get_or_insert(now);
            if now >= deadline {
                break Err(ReplicationWaitError::TimedOut);
            }
            let changed = super::super::notify::any_changed(vec![(self.appended.clone(), g)]);
            let timer = glommio::timer::sleep(deadline - now);
            futures_lite::future::or(changed, async {
                timer.await;
            })
            .await;
        };
        let waited = waiting_since.map_or(Duration::ZERO, |since| since.elapsed());
        (waited, result)
    }
}
