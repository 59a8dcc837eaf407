//! Leader elections the controller makes when a broker goes away or comes
//! back, as KRaft does on `FenceBroker` / `UnfenceBroker` and controlled
//! shutdown:
//!
//! - A broker that is fenced or shuts down leaves the ISR of every partition
//!   it is in, unless it is the last member (the ISR then keeps it, so the
//!   partition can come back with it). Partitions it led get the first
//!   alive ISR member (in replica order) as leader, or no leader at all
//!   (`unclean.leader.election.enable=false`: a replica outside the ISR
//!   never leads).
//! - A broker that is unfenced becomes the leader of every leaderless
//!   partition whose ISR holds it.
//!
//! Each decision is a `PartitionChange` record; applying it bumps the leader
//! epoch when the leader changes ([`super::image_apply`]).

use super::error::ElectionError;
use super::metadata::{MetadataImage, PartitionRegistration, NO_LEADER};
use super::records::MetadataRecord;

/// The record moving `p` of topic `topic_id` away from `broker`, if any.
fn without_broker(
    topic_id: uuid::Uuid,
    index: i32,
    p: &PartitionRegistration,
    broker: i32,
    alive: impl Fn(i32) -> bool,
) -> Option<MetadataRecord> {
    if !p.isr.contains(&broker) && p.leader != broker {
        return None;
    }
    let rest: Vec<i32> = p.isr.iter().copied().filter(|r| *r != broker).collect();
    let isr = if rest.is_empty() { p.isr.clone() } else { rest };
    let leader = if p.leader == broker {
        Some(
            p.replicas
                .iter()
                .copied()
                .find(|r| *r != broker && isr.contains(r) && alive(*r))
                .unwrap_or(NO_LEADER),
        )
    } else {
        None
    };
    if isr == p.isr && leader.is_none() {
        return None;
    }
    Some(MetadataRecord::PartitionChange {
        topic_id,
        partition_id: index,
        isr: (isr != p.isr).then_some(isr),
        elr: None,
        leader,
        replicas: None,
        adding_replicas: None,
        removing_replicas: None,
    })
}

/// The record `change` gives for each partition of every topic, in order.
fn each_partition(
    image: &MetadataImage,
    change: impl Fn(uuid::Uuid, i32, &PartitionRegistration) -> Option<MetadataRecord>,
) -> Vec<MetadataRecord> {
    image
        .topics
        .values()
        .flat_map(|t| {
            t.assignments
                .iter()
                .enumerate()
                .filter_map(|(i, p)| change(t.id, i as i32, p))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The changes when `broker` stops being available (fenced, shutting down).
pub fn on_broker_gone(image: &MetadataImage, broker: i32) -> Vec<MetadataRecord> {
    let alive = |id: i32| id != broker && image.is_alive(id);
    each_partition(image, |topic_id, i, p| {
        without_broker(topic_id, i, p, broker, alive)
    })
}

/// The changes when `broker` becomes available (unfenced): it leads the
/// leaderless partitions whose ISR holds it.
pub fn on_broker_back(image: &MetadataImage, broker: i32) -> Vec<MetadataRecord> {
    each_partition(image, |topic_id, i, p| {
        (p.leader == NO_LEADER && p.isr.contains(&broker)).then_some(
            MetadataRecord::PartitionChange {
                topic_id,
                partition_id: i,
                isr: None,
                elr: None,
                leader: Some(broker),
                replicas: None,
                adding_replicas: None,
                removing_replicas: None,
            },
        )
    })
}

/// ElectLeaders' two elections (KIP-460).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ElectionType {
    /// The first replica leads again when it is an alive ISR member.
    Preferred,
    /// A leaderless partition takes an alive ISR member, or else any alive
    /// replica (which then is the whole ISR), accepting the loss of what
    /// only the old ISR had.
    Unclean,
}

/// The record ElectLeaders gives partition `index` of topic `topic_id`
/// under `kind`, or why none (see [`ElectionError`]).
pub fn elect(
    image: &MetadataImage,
    topic_id: uuid::Uuid,
    index: i32,
    p: &PartitionRegistration,
    kind: ElectionType,
) -> Result<MetadataRecord, ElectionError> {
    let alive = |id: i32| image.is_alive(id);
    let change = |leader: i32, isr: Option<Vec<i32>>| MetadataRecord::PartitionChange {
        topic_id,
        partition_id: index,
        isr,
        elr: None,
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
            Ok(change(preferred, None))
        }
        ElectionType::Unclean => {
            if p.leader != NO_LEADER {
                return Err(ElectionError::ElectionNotNeeded);
            }
            if let Some(r) = p
                .replicas
                .iter()
                .copied()
                .find(|r| p.isr.contains(r) && alive(*r))
            {
                return Ok(change(r, None));
            }
            match p.replicas.iter().copied().find(|r| alive(*r)) {
                Some(r) => Ok(change(r, Some(vec![r]))),
                None => Err(ElectionError::EligibleLeadersNotAvailable),
            }
        }
    }
}

/// ElectLeaders over `partitions` (None: every partition): each
/// partition's outcome, in order, and the records of those elected.
pub fn elect_leaders(
    image: &MetadataImage,
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
                .and_then(|t| t.partition(index).map(|p| (t.id, p)))
                .ok_or(ElectionError::UnknownTopicOrPartition)
                .and_then(|(id, p)| elect(image, id, index, p, kind))
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
    use crate::cluster::metadata::{BrokerRegistration, Endpoint, TopicMeta};
    use std::sync::Arc;
    use uuid::Uuid;

    fn image(alive: &[i32], parts: &[(&[i32], &[i32], i32)]) -> (MetadataImage, Uuid) {
        let mut img = MetadataImage::empty("c".into());
        for id in 1..=3 {
            img.registrations.insert(
                id,
                BrokerRegistration {
                    node_id: id,
                    incarnation_id: Uuid::nil(),
                    epoch: 1,
                    endpoints: vec![Endpoint {
                        listener: "PLAINTEXT".into(),
                        host: "h".into(),
                        port: 1,
                    }],
                    rack: None,
                    fenced: !alive.contains(&id),
                    in_controlled_shutdown: false,
                },
            );
        }
        let id = Uuid::new_v4();
        let assignments = parts
            .iter()
            .map(|(replicas, isr, leader)| PartitionRegistration {
                replicas: replicas.to_vec(),
                isr: isr.to_vec(),
                elr: vec![],
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
        let changes = on_broker_gone(&img, 1);
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
    fn the_last_isr_member_stays_and_the_partition_waits_for_it() {
        let (img, _) = image(&[2, 3], &[(&[1, 2], &[1], 1)]);
        let img2 = img.apply(10, &on_broker_gone(&img, 1));
        let p = img2.partition("t", 0).unwrap();
        assert_eq!(
            (p.leader, p.isr.clone()),
            (NO_LEADER, vec![1]),
            "no unclean election"
        );
        // Broker 1 comes back: it leads again.
        let mut img3 = img2.clone();
        if let Some(b) = img3.registrations.get_mut(&1) {
            b.fenced = false;
        }
        let img4 = img3.apply(11, &on_broker_back(&img3, 1));
        let p = img4.partition("t", 0).unwrap();
        assert_eq!((p.leader, p.leader_epoch), (1, 2));
        assert!(on_broker_back(&img4, 1).is_empty());
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
        let (records, out) = elect_leaders(&img, ElectionType::Preferred, None);
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
        let asked = vec![
            ("t".to_string(), 0),
            ("t".to_string(), 1),
            ("t".to_string(), 2),
            ("nope".to_string(), 0),
        ];
        let (records, out) = elect_leaders(&img, ElectionType::Unclean, Some(&asked));
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
