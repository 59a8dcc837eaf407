//! One partition's next ISR, Eligible Leader Replicas, last known ELR and
//! leader, as KRaft's controller computes them (KIP-966, enabled on new
//! Kafka clusters from 4.1):
//!
//! - While the ISR is at or above the topic's effective
//!   `min.insync.replicas` (the topic's value, else the cluster-wide one,
//!   at most the replication factor), the ELR and the last known ELR are
//!   empty.
//! - When an ISR change leaves the ISR below it, the members that left the
//!   ISR join the ELR (with the ELR members still out of the ISR). The
//!   leader's high watermark does not move while the ISR is below
//!   `min.insync.replicas`, so an ELR member holds every committed record.
//! - A replica that rejoins the ISR leaves the ELR. A broker that comes
//!   back after an unclean shutdown leaves every ELR (its log may have lost
//!   committed records).
//! - The ISR may become empty: a partition whose last ISR member is fenced
//!   has no leader, and that member waits in the ELR. The last known ELR
//!   then holds the leader of that moment (the last known leader), until
//!   the partition has a leader again (Kafka 4's `lastKnownElr`).
//! - Elections take an alive ISR member (in replica order), else an alive
//!   ELR member (which becomes the whole ISR), else, with the ISR and the
//!   ELR empty, the last known leader when it is alive (what Kafka did
//!   before ELR: the last ISR member leads again when it comes back), else,
//!   only with `unclean.leader.election.enable` (or an unclean
//!   ElectLeaders), any alive replica. The last two are unclean: the new
//!   leader is the whole ISR and the ELR is cleared.

use super::metadata::{MetadataImage, PartitionRegistration, TopicMeta, NO_LEADER};
use super::records::MetadataRecord;

/// Kafka's key of the minimum ISR size.
const MIN_ISR: &str = "min.insync.replicas";
/// Kafka's key of unclean elections.
const UNCLEAN: &str = "unclean.leader.election.enable";

/// The cluster-level settings of elections (the controller's own
/// `server.properties`, KIP-966 makes the cluster-level
/// `min.insync.replicas` the one the controller reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElectionRules {
    /// Static `min.insync.replicas` (Kafka's default 1).
    pub min_insync_replicas: i32,
    /// Static `unclean.leader.election.enable` (Kafka's default false).
    pub unclean_leader_election: bool,
}

impl Default for ElectionRules {
    fn default() -> ElectionRules {
        ElectionRules {
            min_insync_replicas: 1,
            unclean_leader_election: false,
        }
    }
}

impl ElectionRules {
    /// The value of `key` for `topic`: its override, else the cluster-wide
    /// dynamic broker config, else None.
    fn configured<'a>(
        image: &'a MetadataImage,
        topic: &'a TopicMeta,
        key: &str,
    ) -> Option<&'a str> {
        topic
            .configs
            .get(key)
            .or_else(|| image.broker_configs.get(&None).and_then(|c| c.get(key)))
            .map(String::as_str)
    }

    /// Takes the image, a topic and one of its partitions; gives the
    /// effective `min.insync.replicas` (Kafka's `getTopicEffectiveMinIsr`):
    /// the topic's, else the cluster's, at least 1 and at most the
    /// partition's replica count.
    pub fn effective_min_isr(
        &self,
        image: &MetadataImage,
        topic: &TopicMeta,
        p: &PartitionRegistration,
    ) -> usize {
        let configured = Self::configured(image, topic, MIN_ISR)
            .and_then(|v| v.trim().parse::<i64>().ok())
            .unwrap_or(i64::from(self.min_insync_replicas));
        let m = usize::try_from(configured.max(1)).unwrap_or(usize::MAX);
        m.min(p.replicas.len().max(1))
    }

    /// Whether `topic` allows unclean elections
    /// (`unclean.leader.election.enable`: the topic's, else the cluster's).
    pub fn unclean_allowed(&self, image: &MetadataImage, topic: &TopicMeta) -> bool {
        Self::configured(image, topic, UNCLEAN)
            .map(|v| v.trim().eq_ignore_ascii_case("true"))
            .unwrap_or(self.unclean_leader_election)
    }
}

/// How a leader was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaderChoice {
    /// The current leader stays.
    Kept,
    /// An alive ISR member.
    Isr,
    /// An alive ELR member; it becomes the ISR.
    Elr,
    /// The last known leader (last known ELR of one, alive); unclean.
    LastKnownLeader,
    /// Any alive replica (`unclean.leader.election.enable`); unclean.
    Unclean,
    /// Nobody: the partition has no leader.
    None,
}

/// A partition's next state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The ISR, in replica order.
    pub isr: Vec<i32>,
    /// The ELR, in replica order.
    pub elr: Vec<i32>,
    /// The last known ELR, in replica order.
    pub last_known_elr: Vec<i32>,
    /// The leader, or [`NO_LEADER`].
    pub leader: i32,
    /// How the leader was chosen.
    pub choice: LeaderChoice,
}

impl Target {
    /// Takes the partition's topic id, index and current registration;
    /// gives the `PartitionChange` record that turns it into this target,
    /// or None when nothing changes.
    pub fn record(
        &self,
        topic_id: uuid::Uuid,
        index: i32,
        p: &PartitionRegistration,
    ) -> Option<MetadataRecord> {
        let isr = (self.isr != p.isr).then(|| self.isr.clone());
        let elr = (self.elr != p.elr).then(|| self.elr.clone());
        let lke = (self.last_known_elr != p.last_known_elr).then(|| self.last_known_elr.clone());
        let leader = (self.leader != p.leader).then_some(self.leader);
        if isr.is_none() && elr.is_none() && lke.is_none() && leader.is_none() {
            return None;
        }
        Some(MetadataRecord::PartitionChange {
            topic_id,
            partition_id: index,
            isr,
            elr,
            last_known_elr: lke,
            leader,
            replicas: None,
            adding_replicas: None,
            removing_replicas: None,
        })
    }
}

/// Builds one partition's next state (Kafka's `PartitionChangeBuilder`).
#[derive(Debug)]
pub struct ChangeBuilder<'a> {
    p: &'a PartitionRegistration,
    min_isr: usize,
    unclean_allowed: bool,
    isr: Vec<i32>,
    unclean_shutdown: Option<i32>,
    excluded: Option<i32>,
}

/// `members` in the order of `replicas`, without duplicates.
fn in_replica_order(replicas: &[i32], keep: impl Fn(i32) -> bool) -> Vec<i32> {
    replicas.iter().copied().filter(|r| keep(*r)).collect()
}

impl<'a> ChangeBuilder<'a> {
    /// Takes the current registration, the topic's effective
    /// `min.insync.replicas` and whether unclean elections are allowed;
    /// starts with the ISR unchanged.
    pub fn new(p: &'a PartitionRegistration, min_isr: usize, unclean_allowed: bool) -> Self {
        ChangeBuilder {
            p,
            min_isr: min_isr.max(1),
            unclean_allowed,
            isr: p.isr.clone(),
            unclean_shutdown: None,
            excluded: None,
        }
    }

    /// Takes the registration and the topic from `image` with `rules`.
    pub fn for_topic(
        image: &MetadataImage,
        rules: &ElectionRules,
        topic: &TopicMeta,
        p: &'a PartitionRegistration,
    ) -> Self {
        Self::new(
            p,
            rules.effective_min_isr(image, topic, p),
            rules.unclean_allowed(image, topic),
        )
    }

    /// The ISR becomes `isr` (kept in replica order).
    pub fn with_isr(mut self, isr: &[i32]) -> Self {
        self.isr = in_replica_order(&self.p.replicas, |r| isr.contains(&r));
        self
    }

    /// `broker` leaves the ISR (fenced, shutting down) and may not lead.
    pub fn without(mut self, broker: i32) -> Self {
        self.isr.retain(|r| *r != broker);
        self.excluded = Some(broker);
        self
    }

    /// `broker` came back from an unclean shutdown: it leaves the ELR.
    pub fn unclean_shutdown(mut self, broker: i32) -> Self {
        self.unclean_shutdown = Some(broker);
        self
    }

    /// Also allows an unclean election (an unclean ElectLeaders).
    pub fn allow_unclean(mut self) -> Self {
        self.unclean_allowed = true;
        self
    }

    /// The ELR for ISR `isr`, from the ISR and ELR of `p`: empty at or
    /// above min ISR, else every member of both that is not in `isr` (and
    /// did not come back from an unclean shutdown).
    fn track(&self, p: &PartitionRegistration, isr: &[i32]) -> Vec<i32> {
        if isr.len() >= self.min_isr {
            return Vec::new();
        }
        in_replica_order(&p.replicas, |r| {
            (p.isr.contains(&r) || p.elr.contains(&r))
                && !isr.contains(&r)
                && self.unclean_shutdown != Some(r)
        })
    }

    /// The last known ELR for ISR `isr` and leader `leader`: cleared while
    /// the partition has a leader; the leader of the moment when the ISR
    /// becomes empty; else unchanged.
    fn last_known(&self, isr: &[i32], leader: i32) -> Vec<i32> {
        let p = self.p;
        if leader != NO_LEADER {
            Vec::new()
        } else if isr.is_empty() && !p.isr.is_empty() && p.leader != NO_LEADER {
            vec![p.leader]
        } else {
            p.last_known_elr.clone()
        }
    }

    /// Takes which brokers may lead (alive: unfenced, not shutting down);
    /// gives the next state: the current leader stays while it is in the
    /// ISR and alive, else an election (see the module docs).
    pub fn build(self, alive: impl Fn(i32) -> bool) -> Target {
        let alive = |r: i32| Some(r) != self.excluded && alive(r);
        let p = self.p;
        let elr = self.track(p, &self.isr);
        let clean = |isr: Vec<i32>, elr: Vec<i32>, leader: i32, choice: LeaderChoice| Target {
            last_known_elr: self.last_known(&isr, leader),
            isr,
            elr,
            leader,
            choice,
        };
        if p.leader != NO_LEADER && self.isr.contains(&p.leader) && alive(p.leader) {
            return clean(self.isr.clone(), elr, p.leader, LeaderChoice::Kept);
        }
        if let Some(l) = p
            .replicas
            .iter()
            .copied()
            .find(|r| self.isr.contains(r) && alive(*r))
        {
            return clean(self.isr.clone(), elr, l, LeaderChoice::Isr);
        }
        if let Some(l) = elr.iter().copied().find(|r| alive(*r)) {
            // The ELR member becomes the ISR; the members of the old ISR
            // (none alive) wait in the ELR with the rest.
            let merged = PartitionRegistration {
                isr: self.isr.clone(),
                elr,
                ..p.clone()
            };
            let elr = self.track(&merged, &[l]);
            return clean(vec![l], elr, l, LeaderChoice::Elr);
        }
        let lke = self.last_known(&self.isr, NO_LEADER);
        // The last known leader and an unclean election: the new leader is
        // the whole ISR, and the ELR is cleared.
        if self.isr.is_empty() && elr.is_empty() {
            if let [l] = lke[..] {
                if alive(l) {
                    return clean(vec![l], Vec::new(), l, LeaderChoice::LastKnownLeader);
                }
            }
        }
        if self.unclean_allowed {
            if let Some(l) = p.replicas.iter().copied().find(|r| alive(*r)) {
                return clean(vec![l], Vec::new(), l, LeaderChoice::Unclean);
            }
        }
        Target {
            isr: self.isr,
            elr,
            last_known_elr: lke,
            leader: NO_LEADER,
            choice: LeaderChoice::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(isr: &[i32], elr: &[i32], lke: &[i32], leader: i32) -> PartitionRegistration {
        PartitionRegistration {
            replicas: vec![1, 2, 3],
            isr: isr.to_vec(),
            elr: elr.to_vec(),
            last_known_elr: lke.to_vec(),
            leader,
            leader_epoch: 0,
            partition_epoch: 0,
            adding_replicas: vec![],
            removing_replicas: vec![],
        }
    }

    fn all(_: i32) -> bool {
        true
    }

    fn state(t: &Target) -> (Vec<i32>, Vec<i32>, Vec<i32>, i32) {
        (
            t.isr.clone(),
            t.elr.clone(),
            t.last_known_elr.clone(),
            t.leader,
        )
    }

    #[test]
    fn a_shrink_below_min_isr_moves_the_removed_members_to_the_elr() {
        let p = reg(&[1, 2, 3], &[], &[], 1);
        // Still at min ISR 2: no ELR.
        let t = ChangeBuilder::new(&p, 2, false)
            .with_isr(&[1, 2])
            .build(all);
        assert_eq!(state(&t), (vec![1, 2], vec![], vec![], 1));
        let p = reg(&[1, 2], &[], &[], 1);
        let t = ChangeBuilder::new(&p, 2, false).with_isr(&[1]).build(all);
        assert_eq!(state(&t), (vec![1], vec![2], vec![], 1));
        assert_eq!(t.choice, LeaderChoice::Kept);
        // min ISR 1: an ISR of one is enough, nothing is tracked.
        let t = ChangeBuilder::new(&p, 1, false).with_isr(&[1]).build(all);
        assert_eq!(state(&t), (vec![1], vec![], vec![], 1));
    }

    #[test]
    fn a_rejoining_member_leaves_the_elr_and_min_isr_clears_it() {
        let p = reg(&[1], &[2, 3], &[], 1);
        let t = ChangeBuilder::new(&p, 3, false)
            .with_isr(&[1, 3])
            .build(all);
        assert_eq!(state(&t), (vec![1, 3], vec![2], vec![], 1));
        let t = ChangeBuilder::new(&p, 2, false)
            .with_isr(&[3, 1])
            .build(all);
        assert_eq!(state(&t), (vec![1, 3], vec![], vec![], 1));
        let p = reg(&[1], &[2], &[3], 1);
        let t = ChangeBuilder::new(&p, 2, false)
            .with_isr(&[1, 2])
            .build(all);
        assert_eq!(
            state(&t),
            (vec![1, 2], vec![], vec![], 1),
            "LKE cleared too"
        );
    }

    #[test]
    fn the_last_isr_member_fenced_empties_the_isr_and_waits_in_the_elr() {
        let p = reg(&[1], &[2], &[], 1);
        let alive = |r: i32| r == 3;
        let t = ChangeBuilder::new(&p, 2, false).without(1).build(alive);
        assert_eq!(state(&t), (vec![], vec![1, 2], vec![1], NO_LEADER));
        assert_eq!(t.choice, LeaderChoice::None);
        // With broker 2 alive, the ELR member leads and becomes the ISR.
        let t = ChangeBuilder::new(&p, 2, false)
            .without(1)
            .build(|r| r != 1);
        assert_eq!(state(&t), (vec![2], vec![1], vec![], 2));
        assert_eq!(t.choice, LeaderChoice::Elr);
    }

    #[test]
    fn isr_first_then_elr_then_nothing_without_unclean() {
        let p = reg(&[1, 3], &[], &[], 1);
        let t = ChangeBuilder::new(&p, 2, false)
            .without(1)
            .build(|r| r != 1);
        assert_eq!(state(&t), (vec![3], vec![1], vec![], 3));
        assert_eq!(t.choice, LeaderChoice::Isr);
        // Only broker 3 alive, outside ISR and ELR.
        let p = reg(&[], &[1, 2], &[1], NO_LEADER);
        let t = ChangeBuilder::new(&p, 2, false).build(|r| r == 3);
        assert_eq!(state(&t), (vec![], vec![1, 2], vec![1], NO_LEADER));
        let t = ChangeBuilder::new(&p, 2, true).build(|r| r == 3);
        assert_eq!(state(&t), (vec![3], vec![], vec![], 3));
        assert_eq!(t.choice, LeaderChoice::Unclean);
    }

    #[test]
    fn an_unclean_shutdown_leaves_the_elr_and_the_last_known_leader_waits() {
        // KIP-966's "last replica standing": 1 led alone, 2 is in the ELR.
        let p = reg(&[], &[1, 2], &[1], NO_LEADER);
        let t = ChangeBuilder::new(&p, 2, false)
            .unclean_shutdown(1)
            .build(|_| false);
        assert_eq!(state(&t), (vec![], vec![2], vec![1], NO_LEADER));
        // Broker 1 alive again: it is not elected while 2 may come back.
        let p = reg(&[], &[2], &[1], NO_LEADER);
        let t = ChangeBuilder::new(&p, 2, false).build(|r| r == 1);
        assert_eq!(t.choice, LeaderChoice::None);
        // Broker 2 back: it leads, the last known ELR is cleared.
        let t = ChangeBuilder::new(&p, 2, false).build(all);
        assert_eq!(state(&t), (vec![2], vec![], vec![], 2));
    }

    #[test]
    fn the_last_known_leader_leads_when_the_isr_and_elr_are_empty() {
        // One replica, min ISR 1: its broker fenced, then back after a
        // kill -9.
        let mut p = reg(&[1], &[], &[], 1);
        p.replicas = vec![1];
        let t = ChangeBuilder::new(&p, 1, false).without(1).build(all);
        assert_eq!(state(&t), (vec![], vec![1], vec![1], NO_LEADER));
        let mut p = reg(&[], &[1], &[1], NO_LEADER);
        p.replicas = vec![1];
        let t = ChangeBuilder::new(&p, 1, false)
            .unclean_shutdown(1)
            .build(|_| false);
        assert_eq!(state(&t), (vec![], vec![], vec![1], NO_LEADER));
        let mut p = reg(&[], &[], &[1], NO_LEADER);
        p.replicas = vec![1];
        let t = ChangeBuilder::new(&p, 1, false).build(all);
        assert_eq!(state(&t), (vec![1], vec![], vec![], 1));
        assert_eq!(t.choice, LeaderChoice::LastKnownLeader);
        // Not alive: nobody leads.
        let t = ChangeBuilder::new(&p, 1, false).build(|_| false);
        assert_eq!(t.choice, LeaderChoice::None);
    }

    #[test]
    fn effective_min_isr_is_at_most_the_replication_factor() {
        use std::collections::BTreeMap;
        use std::sync::Arc;
        let mut img = MetadataImage::empty("c".into());
        let p = reg(&[1, 2, 3], &[], &[], 1);
        let mut configs = BTreeMap::new();
        let t = |configs: &BTreeMap<String, String>| TopicMeta {
            name: Arc::from("t"),
            id: uuid::Uuid::nil(),
            partitions: 1,
            configs: configs.clone(),
            assignments: vec![p.clone()],
        };
        let rules = ElectionRules {
            min_insync_replicas: 2,
            unclean_leader_election: false,
        };
        assert_eq!(rules.effective_min_isr(&img, &t(&configs), &p), 2);
        img.broker_configs
            .entry(None)
            .or_default()
            .insert(MIN_ISR.into(), "3".into());
        assert_eq!(rules.effective_min_isr(&img, &t(&configs), &p), 3);
        configs.insert(MIN_ISR.into(), "5".into());
        assert_eq!(rules.effective_min_isr(&img, &t(&configs), &p), 3);
        assert!(!rules.unclean_allowed(&img, &t(&configs)));
        configs.insert(UNCLEAN.into(), "true".into());
        assert!(rules.unclean_allowed(&img, &t(&configs)));
    }
}
