//! Leader elections the controller makes when a broker goes away or comes
//! back, as KRaft does on `FenceBroker` / `UnfenceBroker`, controlled
//! shutdown and a registration after an unclean shutdown, with Eligible
//! Leader Replicas (KIP-966, see [`super::elr`] for the rules):
//!
//! - A broker that is fenced or shuts down leaves the ISR of every partition
//!   it is in (the ISR may become empty); below the topic's effective
//!   `min.insync.replicas` it joins the ELR. Partitions it led get an alive
//!   ISR member (in replica order), else an alive ELR member, else the last
//!   known leader, else (`unclean.leader.election.enable` only) any alive
//!   replica, else no leader.
//! - A broker that is unfenced leads the leaderless partitions it can lead
//!   by the same order.
//! - A broker that registers after an unclean shutdown leaves every ELR
//!   (its log may have lost acknowledged records).
//!
//! Each decision is a `PartitionChange` record; applying it bumps the leader
//! epoch when the leader changes ([`super::image_apply`]).

use super::elr::{ChangeBuilder, ElectionRules};
use super::error::ElectionError;
use super::metadata::{MetadataImage, PartitionRegistration, TopicMeta, NO_LEADER};
use super::records::MetadataRecord;

/// The record `change` gives for each partition of every topic, in order.
fn each_partition(
    image: &MetadataImage,
    change: impl Fn(&TopicMeta, i32, &PartitionRegistration) -> Option<MetadataRecord>,
) -> Vec<MetadataRecord> {
    image
        .topics
        .values()
        .flat_map(|t| {
            t.assignments
                .iter()
                .enumerate()
                .filter_map(|(i, p)| change(t, i as i32, p))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Takes the image, the election rules and a broker that stops being
/// available (fenced, shutting down); gives the changes: it leaves every
/// ISR, joins the ELR where the ISR falls below min ISR, and the partitions
/// it led get a new leader (or none).
pub fn on_broker_gone(
    image: &MetadataImage,
    rules: &ElectionRules,
    broker: i32,
) -> Vec<MetadataRecord> {
    let alive = |id: i32| id != broker && image.is_alive(id);
    each_partition(image, |t, i, p| {
        if !p.isr.contains(&broker) && p.leader != broker {
            return None;
        }
        ChangeBuilder::for_topic(image, rules, t, p)
            .without(broker)
            .build(alive)
            .record(t.id, i, p)
    })
}

/// Takes the image (with `broker` alive in it), the election rules and a
/// broker that became available (unfenced); gives the elections of the
/// leaderless partitions it may lead (ISR, ELR, last known leader, or any
/// replica where unclean elections are allowed).
pub fn on_broker_back(
    image: &MetadataImage,
    rules: &ElectionRules,
    broker: i32,
) -> Vec<MetadataRecord> {
    let alive = |id: i32| image.is_alive(id);
    each_partition(image, |t, i, p| {
        let involved = p.isr.contains(&broker)
            || p.elr.contains(&broker)
            || p.last_known_elr.contains(&broker)
            || (p.replicas.contains(&broker) && rules.unclean_allowed(image, t));
        if p.leader != NO_LEADER || !involved {
            return None;
        }
        let target = ChangeBuilder::for_topic(image, rules, t, p).build(alive);
        (target.leader != NO_LEADER)
            .then(|| target.record(t.id, i, p))
            .flatten()
    })
}

/// Takes the image, the election rules and a broker that registers after
/// an unclean shutdown (KIP-966: its `previous_broker_epoch` is not its
/// registered epoch); gives the changes removing it from every ISR and
/// ELR.
pub fn on_unclean_shutdown(
    image: &MetadataImage,
    rules: &ElectionRules,
    broker: i32,
) -> Vec<MetadataRecord> {
    let alive = |id: i32| id != broker && image.is_alive(id);
    each_partition(image, |t, i, p| {
        if !p.isr.contains(&broker) && !p.elr.contains(&broker) {
            return None;
        }
        ChangeBuilder::for_topic(image, rules, t, p)
            .without(broker)
            .unclean_shutdown(broker)
            .build(alive)
            .record(t.id, i, p)
    })
}

/// Takes the image with a topic's new configs, the election rules and the
/// topic's name; gives the changes its partitions need under them: the ELR
/// cleared where the ISR now reaches `min.insync.replicas` (KIP-966), a
/// leader for leaderless partitions that can have one now (an unclean one
/// when `unclean.leader.election.enable` was turned on).
pub fn on_topic_config_change(
    image: &MetadataImage,
    rules: &ElectionRules,
    topic: &str,
) -> Vec<MetadataRecord> {
    let alive = |id: i32| image.is_alive(id);
    let Some(t) = image.topic(topic) else {
        return Vec::new();
    };
    t.assignments
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            ChangeBuilder::for_topic(image, rules, t, p)
                .build(alive)
                .record(t.id, i as i32, p)
        })
        .collect()
}

/// ElectLeaders' two elections (KIP-460).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ElectionType {
    /// The first replica leads again when it is an alive ISR member.
    Preferred,
    /// A leaderless partition takes an alive ISR member, else an alive ELR
    /// member, else the last known leader, else any alive replica (which
    /// then is the whole ISR), accepting the loss of what only the old ISR
    /// had.
    Unclean,
}

/// The record ElectLeaders gives partition `index` of topic `t` under
/// `kind`, or why none (see [`ElectionError`]).
pub fn elect(
    image: &MetadataImage,
    rules: &ElectionRules,
    t: &TopicMeta,
    index: i32,
    p: &PartitionRegistration,
    kind: ElectionType,
) -> Result<MetadataRecord, ElectionError> {
    let topic_id = t.id;
    let alive = |id: i32| image.is_alive(id);
    let change = |leader: i32| MetadataRecord::PartitionChange {
        topic_id,
        partition_id: index,
        isr: None,
        elr: None,
        last_known_elr: None,
        leader: Some(leader),
        replicas: None,
        adding_replicas: None,
        removing_replicas: None,
    };
    match kind {
        ElectionType::Preferred => {
            let preferred = p.replicas.first().copied().unwrap_or(NO_LEADER);
            if p.leader == preferred {
                return Err(ElectionError::ElectionNotNeeded);
            }
            if preferred == NO_LEADER || !alive(preferred) || !p.isr.contains(&preferred) {
                return Err(ElectionError::PreferredLeaderNotAvailable { preferred });
            }
            Ok(change(preferred))
        }
        ElectionType::Unclean => {
            if p.leader != NO_LEADER {
                return Err(ElectionError::ElectionNotNeeded);
            }
            let target = ChangeBuilder::for_topic(image, rules, t, p)
                .allow_unclean()
                .build(alive);
            if target.leader == NO_LEADER {
                return Err(ElectionError::EligibleLeadersNotAvailable);
            }
            target
                .record(topic_id, index, p)
                .ok_or(ElectionError::EligibleLeadersNotAvailable)
        }
    }
}

/// ElectLeaders over `partitions` (None: every partition): each
/// partition's outcome, in order, and the records of those elected.
pub fn elect_leaders(
    image: &MetadataImage,
    rules: &ElectionRules,
    kind: ElectionType,
    partitions: Option<&[(String, i32)]>,
) -> (Vec<MetadataRecord>, Vec<ElectionOutcome>) {
    let asked: Vec<(String, i32)> = match partitions {
        Some(ps) => ps.to_vec(),
        None => image
            .topics
            .values()
            .flat_map(|t| (0..t.partitions).map(move |i| (t.name.to_string(), i)))
            .collect(),
    };
    let mut records = Vec::new();
    let outcomes = asked
        .into_iter()
        .map(|(topic, index)| {
            let result = image
                .topic(&topic)
                .and_then(|t| t.partition(index).map(|p| (t, p)))
                .ok_or(ElectionError::UnknownTopicOrPartition)
                .and_then(|(t, p)| elect(image, rules, t, index, p, kind))
                .map(|r| records.push(r));
            ElectionOutcome {
                topic,
                partition: index,
                result,
            }
        })
        .collect();
    (records, outcomes)
}

/// One partition's ElectLeaders outcome.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ElectionOutcome {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// Elected, or why not.
    pub result: Result<(), ElectionError>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::metadata::TopicMeta;
    use std::sync::Arc;
    use uuid::Uuid;

    fn image(alive: &[i32], parts: &[(&[i32], &[i32], i32)]) -> (MetadataImage, Uuid) {
        let mut img = MetadataImage::empty("c".into());
        img.register_three_test_brokers(|_| 1, |id| !alive.contains(&id));
        let id = Uuid::new_v4();
        let assignments = parts
            .iter()
            .map(|(replicas, isr, leader)| PartitionRegistration {
                replicas: replicas.to_vec(),
                isr: isr.to_vec(),
                elr: vec![],
                last_known_elr: Vec::new(),
                leader: *leader,
                leader_epoch: 0,
                partition_epoch: 0,
                adding_replicas: Vec::new(),
                removing_replicas: Vec::new(),
            })
            .collect::<Vec<_>>();
        let t = TopicMeta {
            name: Arc::from("t"),
            id,
            partitions: assignments.len() as i32,
            configs: Default::default(),
            assignments,
        };
        (img.with_topic(t), id)
    }

    #[test]
    fn a_gone_leader_hands_over_to_the_next_isr_member() {
        let (img, id) = image(
            &[2, 3],
            &[
                (&[1, 2, 3], &[1, 2, 3], 1),
                (&[2, 1, 3], &[2, 1], 2),
                (&[2, 3], &[2, 3], 2),
            ],
        );
        let changes = on_broker_gone(&img, &ElectionRules::default(), 1);
        assert_eq!(changes.len(), 2, "{changes:?}");
        let img2 = img.apply(10, &changes);
        let p0 = img2.partition("t", 0).unwrap();
        assert_eq!(
            (p0.leader, p0.isr.clone(), p0.leader_epoch),
            (2, vec![2, 3], 1)
        );
        let p1 = img2.partition("t", 1).unwrap();
        assert_eq!(
            (p1.leader, p1.isr.clone(), p1.leader_epoch),
            (2, vec![2], 0)
        );
        assert_eq!(img2.partition("t", 2), img.partition("t", 2));
        let _ = id;
    }

    #[test]
    fn the_last_isr_member_waits_in_the_elr_and_the_partition_for_it() {
        let (img, _) = image(&[2, 3], &[(&[1, 2], &[1], 1)]);
        let img2 = img.apply(10, &on_broker_gone(&img, &ElectionRules::default(), 1));
        let p = img2.partition("t", 0).unwrap();
        assert_eq!(
            (p.leader, p.isr.clone(), p.elr.clone()),
            (NO_LEADER, vec![], vec![1]),
            "no unclean election; the ISR may be empty (KIP-966)"
        );
        // Broker 1 comes back: it leads again.
        let mut img3 = img2.clone();
        if let Some(b) = img3.registrations.get_mut(&1) {
            b.fenced = false;
        }
        let img4 = img3.apply(11, &on_broker_back(&img3, &ElectionRules::default(), 1));
        let p = img4.partition("t", 0).unwrap();
        assert_eq!((p.leader, p.leader_epoch), (1, 2));
        assert!(on_broker_back(&img4, &ElectionRules::default(), 1).is_empty());
    }

    fn leader_of(r: &MetadataRecord) -> Option<(i32, Option<Vec<i32>>)> {
        match r {
            MetadataRecord::PartitionChange { leader, isr, .. } => leader.map(|l| (l, isr.clone())),
            _ => None,
        }
    }

    #[test]
    fn preferred_election_gives_the_first_replica_back_its_leadership() {
        let (img, _) = image(
            &[1, 2, 3],
            &[
                (&[1, 2, 3], &[1, 2, 3], 2),
                (&[2, 3, 1], &[2, 3, 1], 2),
                (&[3, 1, 2], &[1, 2], 1),
            ],
        );
        let (records, out) = elect_leaders(
            &img,
            &ElectionRules::default(),
            ElectionType::Preferred,
            None,
        );
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].result, Ok(()));
        assert_eq!(out[1].result, Err(ElectionError::ElectionNotNeeded));
        assert_eq!(
            out[2].result,
            Err(ElectionError::PreferredLeaderNotAvailable { preferred: 3 })
        );
        assert_eq!(records.len(), 1);
        assert_eq!(leader_of(&records[0]), Some((1, None)));
    }

    #[test]
    fn unclean_election_takes_an_alive_replica_only_without_a_leader() {
        let (img, _) = image(
            &[2],
            &[
                (&[1, 2, 3], &[1], NO_LEADER),
                (&[1, 2, 3], &[1], 1),
                (&[1, 3], &[1], NO_LEADER),
            ],
        );
        let asked = [
            ("t".to_string(), 0),
            ("t".to_string(), 1),
            ("t".to_string(), 2),
            ("nope".to_string(), 0),
        ];
        let (records, out) = elect_leaders(
            &img,
            &ElectionRules::default(),
            ElectionType::Unclean,
            Some(&asked[..]),
        );
        assert_eq!(out[0].result, Ok(()));
        assert_eq!(out[1].result, Err(ElectionError::ElectionNotNeeded));
        assert_eq!(
            out[2].result,
            Err(ElectionError::EligibleLeadersNotAvailable)
        );
        assert_eq!(out[3].result, Err(ElectionError::UnknownTopicOrPartition));
        // Outside the ISR: the new leader is the whole ISR.
        assert_eq!(leader_of(&records[0]), Some((2, Some(vec![2]))));
    }
}

#[cfg(test)]
mod elr_tests {
    use super::*;
    use crate::cluster::metadata::TopicMeta;
    use std::sync::Arc;
    use uuid::Uuid;

    /// Brokers 1..=3 (`alive` unfenced), one topic with `min.insync.replicas`
    /// `min_isr`, partitions given as (ISR, ELR, leader) over replicas
    /// [1, 2, 3].
    fn image(alive: &[i32], min_isr: &str, parts: &[(&[i32], &[i32], i32)]) -> MetadataImage {
        let mut img = MetadataImage::empty("c".into());
        img.register_three_test_brokers(|_| 1, |id| !alive.contains(&id));
        let assignments = parts
            .iter()
            .map(|(isr, elr, leader)| PartitionRegistration {
                replicas: vec![1, 2, 3],
                isr: isr.to_vec(),
                elr: elr.to_vec(),
                last_known_elr: vec![],
                leader: *leader,
                leader_epoch: 0,
                partition_epoch: 0,
                adding_replicas: vec![],
                removing_replicas: vec![],
            })
            .collect::<Vec<_>>();
        let mut configs = std::collections::BTreeMap::new();
        configs.insert("min.insync.replicas".to_string(), min_isr.to_string());
        img.with_topic(TopicMeta {
            name: Arc::from("t"),
            id: Uuid::from_u128(9),
            partitions: assignments.len() as i32,
            configs,
            assignments,
        })
    }

    fn fence(img: &MetadataImage, b: i32) -> MetadataImage {
        let mut next = img.clone();
        if let Some(r) = next.registrations.get_mut(&b) {
            r.fenced = true;
        }
        let changes = on_broker_gone(&next, &ElectionRules::default(), b);
        next.apply(next.offset + 1, &changes)
    }

    #[test]
    fn fencing_below_min_isr_keeps_the_fenced_members_eligible() {
        let img = image(&[1, 2, 3], "2", &[(&[1, 2, 3], &[], 1)]);
        let img = fence(&img, 3);
        let p = img.partition("t", 0).unwrap();
        assert_eq!((p.isr.clone(), p.elr.clone()), (vec![1, 2], vec![]));
        let img = fence(&img, 2);
        let p = img.partition("t", 0).unwrap();
        assert_eq!((p.isr.clone(), p.elr.clone()), (vec![1], vec![2]));
        let img = fence(&img, 1);
        let p = img.partition("t", 0).unwrap();
        assert_eq!(
            (p.isr.clone(), p.elr.clone(), p.leader, p.leader_epoch),
            (vec![], vec![1, 2], NO_LEADER, 1)
        );
    }

    #[test]
    fn an_unfenced_elr_member_leads_and_an_unclean_one_leaves_the_elr() {
        let img = image(
            &[2],
            "2",
            &[(&[], &[1, 2], NO_LEADER), (&[], &[1], NO_LEADER)],
        );
        let rules = ElectionRules::default();
        let changes = on_broker_back(&img, &rules, 2);
        assert_eq!(changes.len(), 1, "only the partition 2 is eligible in");
        let img2 = img.apply(5, &changes);
        let p = img2.partition("t", 0).unwrap();
        assert_eq!(
            (p.leader, p.isr.clone(), p.elr.clone()),
            (2, vec![2], vec![1])
        );
        // Broker 1 registers after a kill -9.
        let img3 = img2.apply(6, &on_unclean_shutdown(&img2, &rules, 1));
        let p0 = img3.partition("t", 0).unwrap();
        assert_eq!(
            (p0.elr.clone(), p0.last_known_elr.clone(), p0.leader),
            (vec![], vec![], 2)
        );
        assert_eq!(
            p0.leader_epoch, p.leader_epoch,
            "an ELR change alone keeps the epoch"
        );
        let p1 = img3.partition("t", 1).unwrap();
        assert_eq!((p1.elr.clone(), p1.leader), (vec![], NO_LEADER));
    }

    #[test]
    fn unclean_elect_leaders_prefers_the_elr_and_reports_no_eligible_leader() {
        let img = image(
            &[2, 3],
            "2",
            &[(&[], &[1, 2], NO_LEADER), (&[], &[1], NO_LEADER)],
        );
        let rules = ElectionRules::default();
        let (records, out) = elect_leaders(&img, &rules, ElectionType::Unclean, None);
        assert_eq!(out[0].result, Ok(()));
        assert_eq!(out[1].result, Ok(()));
        let img2 = img.apply(5, &records);
        let p0 = img2.partition("t", 0).unwrap();
        assert_eq!(
            (p0.leader, p0.isr.clone()),
            (2, vec![2]),
            "the ELR member, clean"
        );
        let p1 = img2.partition("t", 1).unwrap();
        assert_eq!(
            (p1.leader, p1.isr.clone(), p1.elr.clone()),
            (2, vec![2], vec![])
        );
        let img = image(&[], "2", &[(&[], &[1], NO_LEADER)]);
        let (_, out) = elect_leaders(&img, &rules, ElectionType::Unclean, None);
        assert_eq!(
            out[0].result,
            Err(ElectionError::EligibleLeadersNotAvailable)
        );
    }
}
