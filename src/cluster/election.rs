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
            },
        )
    })
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
}
