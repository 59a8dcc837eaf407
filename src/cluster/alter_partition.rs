//! The controller's side of an ISR change a partition leader asks for
//! (Kafka's AlterPartition, KIP-497, with the broker-epoch checks of
//! KIP-903): checked against the image, then one `PartitionChange` record
//! that bumps the partition epoch. Pure: unit-tested with hand-built images.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::elr::{ChangeBuilder, ElectionRules};
use super::metadata::MetadataImage;
use super::records::MetadataRecord;

/// Why the controller refused an ISR change (Kafka's AlterPartition
/// partition errors; internal between brokers, logged by the leader, which
/// proposes again at its next check).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AlterPartitionError {
    /// The asking broker is not registered with that epoch (Kafka
    /// STALE_BROKER_EPOCH).
    #[error("broker {broker} epoch {epoch} is not the registered one")]
    StaleBrokerEpoch {
        /// The asking broker.
        broker: i32,
        /// The epoch it gave.
        epoch: i64,
    },
    /// No such topic or partition (UNKNOWN_TOPIC_OR_PARTITION).
    #[error("unknown partition {partition} of topic {topic_id}")]
    UnknownPartition {
        /// The topic id given.
        topic_id: Uuid,
        /// The partition given.
        partition: i32,
    },
    /// The asking broker does not lead the partition
    /// (NOT_LEADER_OR_FOLLOWER).
    #[error("broker {broker} does not lead the partition (leader {leader})")]
    NotLeader {
        /// The asking broker.
        broker: i32,
        /// The leader in the image.
        leader: i32,
    },
    /// The leader epoch is not the partition's (FENCED_LEADER_EPOCH).
    #[error("leader epoch {given} is not the partition's {current}")]
    FencedLeaderEpoch {
        /// The epoch given.
        given: i32,
        /// The partition's.
        current: i32,
    },
    /// The partition changed since the leader read it
    /// (INVALID_UPDATE_VERSION): the leader retries from the new image.
    #[error("partition epoch {given} is not the partition's {current}")]
    InvalidUpdateVersion {
        /// The epoch given.
        given: i32,
        /// The partition's.
        current: i32,
    },
    /// The new ISR names a broker that is not a replica, omits the
    /// leader, or adds a fenced or shutting-down broker (INVALID_REQUEST /
    /// INELIGIBLE_REPLICA).
    #[error("broker {broker} may not be in the ISR")]
    IneligibleReplica {
        /// The broker.
        broker: i32,
    },
}

/// A leader's ask for a new ISR (Kafka's AlterPartitionRequest, one
/// partition).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IsrAsk {
    /// The asking leader's broker id.
    pub broker: i32,
    /// Its broker epoch (KIP-903).
    pub broker_epoch: i64,
    /// The topic's id.
    pub topic_id: Uuid,
    /// Partition index.
    pub partition: i32,
    /// The leader epoch it leads in.
    pub leader_epoch: i32,
    /// The partition epoch it read (the compare-and-set token).
    pub partition_epoch: i32,
    /// The ISR it asks for.
    pub new_isr: Vec<i32>,
}

/// Takes the image, the election rules and a leader's [`IsrAsk`]; gives
/// the `PartitionChange` record to commit (none when the ISR is already
/// that), or why not. A member the leader adds must be alive; a member it
/// keeps may be fenced meanwhile (the fence's own change removes it). The
/// ELR follows the ISR (KIP-966, [`super::elr`]): members removed below the
/// effective `min.insync.replicas` join it, members added leave it, an ISR
/// back at min ISR clears it.
pub fn decide(
    image: &MetadataImage,
    rules: &ElectionRules,
    ask: &IsrAsk,
) -> Result<Vec<MetadataRecord>, AlterPartitionError> {
    let IsrAsk {
        broker,
        broker_epoch,
        topic_id,
        partition,
        leader_epoch,
        partition_epoch,
        ref new_isr,
    } = *ask;
    match image.registrations.get(&broker) {
        Some(b) if b.epoch == broker_epoch => {}
        _ => {
            return Err(AlterPartitionError::StaleBrokerEpoch {
                broker,
                epoch: broker_epoch,
            })
        }
    }
    let unknown = AlterPartitionError::UnknownPartition {
        topic_id,
        partition,
    };
    let topic = image.topic_by_id(&topic_id).ok_or(unknown.clone())?;
    let p = topic.partition(partition).ok_or(unknown)?;
    if p.leader != broker {
        return Err(AlterPartitionError::NotLeader {
            broker,
            leader: p.leader,
        });
    }
    if p.leader_epoch != leader_epoch {
        return Err(AlterPartitionError::FencedLeaderEpoch {
            given: leader_epoch,
            current: p.leader_epoch,
        });
    }
    if p.partition_epoch != partition_epoch {
        return Err(AlterPartitionError::InvalidUpdateVersion {
            given: partition_epoch,
            current: p.partition_epoch,
        });
    }
    if !new_isr.contains(&broker) {
        return Err(AlterPartitionError::IneligibleReplica { broker });
    }
    for r in new_isr {
        let added = !p.isr.contains(r);
        if !p.replicas.contains(r) || (added && !image.is_alive(*r)) {
            return Err(AlterPartitionError::IneligibleReplica { broker: *r });
        }
    }
    // In replica order, without duplicates, as Kafka lists an ISR; the
    // asking leader stays leader (it is in the new ISR).
    let target = ChangeBuilder::for_topic(image, rules, topic, p)
        .with_isr(new_isr)
        .build(|r| r == broker || image.is_alive(r));
    if target.isr == p.isr {
        return Ok(Vec::new());
    }
    // The change that brings the last target replica into the ISR also
    // completes an ongoing reassignment (KIP-455).
    if let Some(done) =
        super::reassignment::isr_change(image, topic_id, partition, p, target.isr.clone())
    {
        return Ok(vec![done]);
    }
    Ok(target.record(topic_id, partition, p).into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::metadata::{PartitionRegistration, TopicMeta};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    fn image(fenced: &[i32]) -> (MetadataImage, Uuid) {
        let mut img = MetadataImage::empty("c".into());
        img.register_three_test_brokers(|id| 10 + i64::from(id), |id| fenced.contains(&id));
        let id = Uuid::from_u128(7);
        let t = TopicMeta {
            name: Arc::from("t"),
            id,
            partitions: 1,
            configs: BTreeMap::new(),
            assignments: vec![PartitionRegistration {
                replicas: vec![1, 2, 3],
                isr: vec![1, 2],
                elr: vec![],
                last_known_elr: Vec::new(),
                leader: 1,
                leader_epoch: 4,
                partition_epoch: 9,
                adding_replicas: Vec::new(),
                removing_replicas: Vec::new(),
            }],
        };
        (img.with_topic(t), id)
    }

    #[allow(clippy::too_many_arguments)]
    fn ask(
        img: &MetadataImage,
        broker: i32,
        broker_epoch: i64,
        topic_id: Uuid,
        partition: i32,
        leader_epoch: i32,
        partition_epoch: i32,
        new_isr: &[i32],
    ) -> Result<Vec<MetadataRecord>, AlterPartitionError> {
        let a = IsrAsk {
            broker,
            broker_epoch,
            topic_id,
            partition,
            leader_epoch,
            partition_epoch,
            new_isr: new_isr.to_vec(),
        };
        decide(img, &ElectionRules::default(), &a)
    }

    fn isr_of(records: &[MetadataRecord]) -> Option<Vec<i32>> {
        match records {
            [MetadataRecord::PartitionChange { isr, .. }] => isr.clone(),
            _ => None,
        }
    }

    #[test]
    fn the_leader_adds_a_caught_up_follower_in_replica_order() {
        let (img, id) = image(&[]);
        let r = ask(&img, 1, 11, id, 0, 4, 9, &[1, 2, 3][..]).unwrap();
        assert_eq!(isr_of(&r), Some(vec![1, 2, 3]));
        let r = ask(&img, 1, 11, id, 0, 4, 9, &[3, 1, 2][..]).unwrap();
        assert_eq!(isr_of(&r), Some(vec![1, 2, 3]));
    }

    #[test]
    fn the_leader_removes_a_lagging_follower() {
        let (img, id) = image(&[]);
        let r = ask(&img, 1, 11, id, 0, 4, 9, &[1][..]).unwrap();
        assert_eq!(isr_of(&r), Some(vec![1]));
        assert_eq!(ask(&img, 1, 11, id, 0, 4, 9, &[1, 2][..]), Ok(vec![]));
    }

    #[test]
    fn stale_asks_are_refused() {
        let (img, id) = image(&[]);
        assert!(matches!(
            ask(&img, 1, 99, id, 0, 4, 9, &[1][..]),
            Err(AlterPartitionError::StaleBrokerEpoch { .. })
        ));
        assert!(matches!(
            ask(&img, 2, 12, id, 0, 4, 9, &[1][..]),
            Err(AlterPartitionError::NotLeader { leader: 1, .. })
        ));
        assert!(matches!(
            ask(&img, 1, 11, id, 0, 3, 9, &[1][..]),
            Err(AlterPartitionError::FencedLeaderEpoch { current: 4, .. })
        ));
        assert!(matches!(
            ask(&img, 1, 11, id, 0, 4, 8, &[1][..]),
            Err(AlterPartitionError::InvalidUpdateVersion { current: 9, .. })
        ));
        assert!(matches!(
            ask(&img, 1, 11, Uuid::from_u128(8), 0, 4, 9, &[1][..]),
            Err(AlterPartitionError::UnknownPartition { .. })
        ));
        assert!(matches!(
            ask(&img, 1, 11, id, 1, 4, 9, &[1][..]),
            Err(AlterPartitionError::UnknownPartition { .. })
        ));
    }

    #[test]
    fn only_alive_replicas_join_and_the_leader_stays() {
        let (img, id) = image(&[3]);
        assert_eq!(
            ask(&img, 1, 11, id, 0, 4, 9, &[1, 2, 3][..]),
            Err(AlterPartitionError::IneligibleReplica { broker: 3 })
        );
        assert_eq!(
            ask(&img, 1, 11, id, 0, 4, 9, &[2][..]),
            Err(AlterPartitionError::IneligibleReplica { broker: 1 })
        );
        assert_eq!(
            ask(&img, 1, 11, id, 0, 4, 9, &[1, 4][..]),
            Err(AlterPartitionError::IneligibleReplica { broker: 4 })
        );
    }
}
