//! Which broker may serve a partition: the decisions behind the data-path
//! answers NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH and
//! UNKNOWN_LEADER_EPOCH, and the current leader a refused client is pointed
//! to (KIP-951).
//!
//! Kafka's order (`ReplicaManager.getPartitionOrError`, then
//! `Partition.getLocalLog`): a partition this broker does not host is
//! UNKNOWN_TOPIC_OR_PARTITION when the metadata does not know it,
//! NOT_LEADER_OR_FOLLOWER when another broker holds it, KAFKA_STORAGE_ERROR
//! when this broker should hold it but its log is offline; a hosted one
//! first checks the request's `current_leader_epoch` (KIP-320) against the
//! replica's leader epoch, then whether the request needs the leader. Until
//! replication is built, every request needs the leader ([`Requester`]).
//! See docs/decisions/not-leader-answers.md.
//!
//! Pure functions of the metadata image and of what the owner shard holds,
//! unit-tested with hand-built images.

use super::error::CoordinatorLookupError;
use super::metadata::{BrokerMeta, MetadataImage, PartitionRegistration, NO_LEADER};

/// Checks that broker `node_id` leads `partition` of the internal `topic`
/// in `image` (coordinators follow their partition's leadership). Errors
/// with [`CoordinatorLookupError::NotCoordinator`] (NOT_COORDINATOR),
/// naming the leader (-1 when none).
pub fn coordinator_here(
    image: &MetadataImage,
    node_id: i32,
    topic: &'static str,
    partition: i32,
) -> Result<(), CoordinatorLookupError> {
    let leader = image
        .partition(topic, partition)
        .map_or(NO_LEADER, |p| p.leader);
    if leader == node_id {
        Ok(())
    } else {
        Err(CoordinatorLookupError::NotCoordinator {
            topic,
            partition,
            leader,
        })
    }
}

/// This broker's replica of one partition, as the last applied image set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaState {
    /// Whether this broker leads the partition.
    pub is_leader: bool,
    /// The partition's leader epoch (Kafka `PartitionRegistration.leaderEpoch`).
    pub leader_epoch: i32,
}

impl ReplicaState {
    /// Takes a partition's registration and a broker id; gives that broker's
    /// replica state, or None when the broker is not one of its replicas.
    pub fn of(reg: &PartitionRegistration, broker: i32) -> Option<ReplicaState> {
        reg.replicas.contains(&broker).then(|| ReplicaState {
            is_leader: reg.is_leader(broker),
            leader_epoch: reg.leader_epoch,
        })
    }
}

/// Who asks to read or write a partition: Kafka decides from it whether only
/// the leader may answer (`FetchParams.fetchOnlyLeader`, `requireLeader`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requester {
    /// A client: a producer, a consumer (Fetch `replica_id` -1 and no
    /// `replica_state`), ListOffsets, DeleteRecords, DescribeProducers.
    Client,
    /// A follower replica fetching (Fetch `replica_id`, or v15+
    /// `replica_state.replica_id`, >= 0). Kafka serves it on the leader only,
    /// as a client; what differs for followers (reading up to the log end,
    /// ISR bookkeeping, diverging epochs) comes with replication.
    Follower {
        /// The follower's broker id.
        replica_id: i32,
    },
}

impl Requester {
    /// Whether only the leader may answer this requester. True for every
    /// requester today: a follower's log is not replicated yet, so reads
    /// from it (KIP-392 consumer reads, DescribeProducers on a follower,
    /// both served by Kafka) would return stale data.
    pub fn needs_leader(self) -> bool {
        match self {
            Requester::Client => true,
            Requester::Follower { .. } => true,
        }
    }
}

/// Why this broker does not serve a partition to a request. Codes in
/// `crate::error` (NOT_LEADER_OR_FOLLOWER (6), FENCED_LEADER_EPOCH (74),
/// UNKNOWN_LEADER_EPOCH (75), UNKNOWN_TOPIC_OR_PARTITION (3),
/// KAFKA_STORAGE_ERROR (56)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LeadershipError {
    /// The metadata knows no such topic or partition:
    /// UNKNOWN_TOPIC_OR_PARTITION (3).
    #[error("unknown topic or partition")]
    UnknownTopicOrPartition,
    /// The topic exists but this broker holds no replica of the partition:
    /// NOT_LEADER_OR_FOLLOWER (6), so the client refreshes its metadata.
    #[error("broker {broker} holds no replica of this partition")]
    NotReplica {
        /// This broker's id.
        broker: i32,
    },
    /// This broker is a replica but its log is not open (it failed to open
    /// or recover): KAFKA_STORAGE_ERROR (56), Kafka's answer for an offline
    /// partition.
    #[error("broker {broker} has this partition's log offline")]
    ReplicaOffline {
        /// This broker's id.
        broker: i32,
    },
    /// This broker is a replica and its log is being opened (recovered) off
    /// the shard after the image that assigned it: NOT_LEADER_OR_FOLLOWER
    /// (6), Kafka's answer while a replica is not hosted yet
    /// (`ReplicaManager.getPartitionOrError`), so the client retries.
    #[error("broker {broker} is still opening this partition's log")]
    ReplicaOpening {
        /// This broker's id.
        broker: i32,
    },
    /// This broker is a follower of the partition, or the partition has no
    /// leader: NOT_LEADER_OR_FOLLOWER (6).
    #[error("this broker is not the leader of this partition")]
    NotLeader,
    /// A follower fetch from a broker that is not a replica of the
    /// partition here: NOT_LEADER_OR_FOLLOWER (6), as Kafka's
    /// `Partition.fetchRecords` answers a replica it does not recognize.
    #[error("broker {replica_id} is not a replica of this partition")]
    UnknownFollower {
        /// The fetching broker's id.
        replica_id: i32,
    },
    /// The request's `current_leader_epoch` is older than the partition's
    /// (KIP-320): FENCED_LEADER_EPOCH (74).
    #[error("leader epoch {requested} is older than the current leader epoch {current}")]
    FencedLeaderEpoch {
        /// The request's epoch.
        requested: i32,
        /// The partition's leader epoch on this broker.
        current: i32,
    },
    /// The request's `current_leader_epoch` is newer than the partition's on
    /// this broker (its metadata is behind; KIP-320): UNKNOWN_LEADER_EPOCH (75).
    #[error("leader epoch {requested} is newer than the current leader epoch {current}")]
    UnknownLeaderEpoch {
        /// The request's epoch.
        requested: i32,
        /// The partition's leader epoch on this broker.
        current: i32,
    },
}

/// Takes this broker's replica state, who asks and the request's
/// `current_leader_epoch` (None: not checked, the wire's -1); gives whether
/// the replica may serve the request: the epoch fencing of KIP-320 first
/// (`Partition.checkCurrentLeaderEpoch`), then the leader requirement.
pub fn check_replica(
    replica: ReplicaState,
    requester: Requester,
    current_leader_epoch: Option<i32>,
) -> Result<(), LeadershipError> {
    if let Some(requested) = current_leader_epoch {
        let current = replica.leader_epoch;
        if requested < current {
            return Err(LeadershipError::FencedLeaderEpoch { requested, current });
        }
        if requested > current {
            return Err(LeadershipError::UnknownLeaderEpoch { requested, current });
        }
    }
    if requester.needs_leader() && !replica.is_leader {
        return Err(LeadershipError::NotLeader);
    }
    Ok(())
}

/// "May this request use this partition here": takes the image, this
/// broker's id, the partition, the replica state of its open log on this
/// broker (None when no log is open), who asks and the request's
/// `current_leader_epoch` (None: not checked). Gives Ok or why not, in
/// Kafka's order (see the module doc).
pub fn check(
    image: &MetadataImage,
    broker: i32,
    topic: &str,
    partition: i32,
    hosted: Option<ReplicaState>,
    requester: Requester,
    current_leader_epoch: Option<i32>,
) -> Result<(), LeadershipError> {
    let Some(reg) = image.partition(topic, partition) else {
        return Err(LeadershipError::UnknownTopicOrPartition);
    };
    match hosted {
        Some(replica) => check_replica(replica, requester, current_leader_epoch),
        None if reg.replicas.contains(&broker) => Err(LeadershipError::ReplicaOffline { broker }),
        None => Err(LeadershipError::NotReplica { broker }),
    }
}

/// Takes the image, this broker's id and a partition whose log this broker
/// is opening; gives why it is not served yet: UNKNOWN_TOPIC_OR_PARTITION
/// when the image no longer knows it, NOT_LEADER_OR_FOLLOWER otherwise
/// ([`LeadershipError::NotReplica`] when this broker is no longer a
/// replica, else [`LeadershipError::ReplicaOpening`]).
pub fn check_opening(
    image: &MetadataImage,
    broker: i32,
    topic: &str,
    partition: i32,
) -> LeadershipError {
    match image.partition(topic, partition) {
        None => LeadershipError::UnknownTopicOrPartition,
        Some(reg) if reg.replicas.contains(&broker) => LeadershipError::ReplicaOpening { broker },
        Some(_) => LeadershipError::NotReplica { broker },
    }
}

/// The leader a client refused with NOT_LEADER_OR_FOLLOWER is pointed to
/// (KIP-951: Produce v10+, Fetch v16+ `current_leader` and `node_endpoints`).
#[derive(Debug, Clone, PartialEq)]
pub struct CurrentLeader {
    /// The leader's broker id, or [`NO_LEADER`] (-1).
    pub leader_id: i32,
    /// The partition's leader epoch, -1 when the partition is unknown.
    pub leader_epoch: i32,
    /// The leader's client endpoint when it is an alive broker (the
    /// response's `node_endpoints` entry), else None.
    pub node: Option<BrokerMeta>,
}

/// Takes the image, a partition and the listener the request came in on
/// (None: the first endpoint); gives its current leader as Kafka's
/// `KafkaApis.getCurrentLeader` does: the registration's leader and leader
/// epoch (-1, -1 for an unknown partition) and the leader's endpoint on
/// that listener if it is alive.
pub fn current_leader(
    image: &MetadataImage,
    topic: &str,
    partition: i32,
    listener: Option<&str>,
) -> CurrentLeader {
    let (leader_id, leader_epoch) = image.leader(topic, partition).unwrap_or((NO_LEADER, -1));
    let node = (leader_id != NO_LEADER && image.is_alive(leader_id))
        .then(|| image.broker_meta(leader_id, listener))
        .flatten();
    CurrentLeader {
        leader_id,
        leader_epoch,
        node,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::metadata::{BrokerRegistration, Endpoint, TopicMeta};
    use std::collections::BTreeMap;
    use uuid::Uuid;

    /// Brokers 1–3 (3 fenced); topic `t` with partitions led by 1 (epoch
    /// 4, replicas 1, 2), by 3 (epoch 2, replicas 3, 1) and none (epoch 7,
    /// replicas 2, 3); topic `solo` on broker 2 only.
    fn image() -> MetadataImage {
        let mut img = MetadataImage::empty("c".into());
        for (id, fenced) in [(1, false), (2, false), (3, true)] {
            img.registrations.insert(
                id,
                BrokerRegistration {
                    node_id: id,
                    incarnation_id: Uuid::new_v4(),
                    epoch: 1,
                    endpoints: vec![Endpoint {
                        listener: "PLAINTEXT".into(),
                        host: format!("b{id}"),
                        port: 9090 + id as u16,
                    }],
                    rack: (id == 1).then(|| "r1".to_string()),
                    fenced,
                    in_controlled_shutdown: false,
                },
            );
        }
        let reg = |replicas: Vec<i32>, leader, leader_epoch| PartitionRegistration {
            isr: replicas.clone(),
            replicas,
            elr: vec![],
            last_known_elr: Vec::new(),
            leader,
            leader_epoch,
            partition_epoch: 0,
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
        };
        let topic = |name: &str, assignments: Vec<PartitionRegistration>| TopicMeta {
            name: name.into(),
            id: Uuid::new_v4(),
            partitions: assignments.len() as i32,
            configs: BTreeMap::new(),
            assignments,
        };
        img.with_topic(topic(
            "t",
            vec![
                reg(vec![1, 2], 1, 4),
                reg(vec![3, 1], 3, 2),
                reg(vec![2, 3], NO_LEADER, 7),
            ],
        ))
        .with_topic(topic("solo", vec![reg(vec![2], 2, 0)]))
    }

    /// `check` as the owner shard of broker `broker` computes it, with the
    /// log open exactly where the image places a replica.
    fn on(
        img: &MetadataImage,
        broker: i32,
        topic: &str,
        p: i32,
        epoch: Option<i32>,
    ) -> Result<(), LeadershipError> {
        let hosted = img
            .partition(topic, p)
            .and_then(|r| ReplicaState::of(r, broker));
        check(img, broker, topic, p, hosted, Requester::Client, epoch)
    }

    #[test]
    fn only_the_leader_serves_clients() {
        let img = image();
        assert_eq!(on(&img, 1, "t", 0, None), Ok(()));
        assert_eq!(on(&img, 2, "t", 0, None), Err(LeadershipError::NotLeader));
        // A follower of a partition led elsewhere, and one without a leader.
        assert_eq!(on(&img, 1, "t", 1, None), Err(LeadershipError::NotLeader));
        assert_eq!(on(&img, 2, "t", 2, None), Err(LeadershipError::NotLeader));
        // No replica here: the topic exists, so NOT_LEADER_OR_FOLLOWER.
        assert_eq!(
            on(&img, 3, "t", 0, None),
            Err(LeadershipError::NotReplica { broker: 3 })
        );
        assert_eq!(
            on(&img, 1, "solo", 0, None),
            Err(LeadershipError::NotReplica { broker: 1 })
        );
        assert_eq!(
            on(&img, 1, "t", 3, None),
            Err(LeadershipError::UnknownTopicOrPartition)
        );
        assert_eq!(
            on(&img, 1, "nope", 0, None),
            Err(LeadershipError::UnknownTopicOrPartition)
        );
        // Follower fetches need the leader too, until replication.
        let follower = Requester::Follower { replica_id: 2 };
        let leader = ReplicaState::of(img.partition("t", 0).unwrap(), 1);
        assert_eq!(check(&img, 1, "t", 0, leader, follower, None), Ok(()));
        let not = ReplicaState::of(img.partition("t", 0).unwrap(), 2);
        assert_eq!(
            check(&img, 2, "t", 0, not, follower, None),
            Err(LeadershipError::NotLeader)
        );
    }

    #[test]
    fn a_replica_without_an_open_log_is_offline() {
        let img = image();
        assert_eq!(
            check(&img, 2, "t", 0, None, Requester::Client, None),
            Err(LeadershipError::ReplicaOffline { broker: 2 })
        );
    }

    #[test]
    fn a_replica_being_opened_is_not_served_yet() {
        let img = image();
        // The leader itself while its log opens: NOT_LEADER_OR_FOLLOWER.
        let e = check_opening(&img, 1, "t", 0);
        assert_eq!(e, LeadershipError::ReplicaOpening { broker: 1 });
        assert_eq!(
            check_opening(&img, 3, "t", 0),
            LeadershipError::NotReplica { broker: 3 }
        );
        assert_eq!(
            check_opening(&img, 1, "gone", 0),
            LeadershipError::UnknownTopicOrPartition
        );
    }

    #[test]
    fn current_leader_epoch_is_fenced_before_leadership() {
        let img = image();
        // The leader of t-0 (epoch 4).
        assert_eq!(on(&img, 1, "t", 0, Some(4)), Ok(()));
        assert_eq!(
            on(&img, 1, "t", 0, Some(3)),
            Err(LeadershipError::FencedLeaderEpoch {
                requested: 3,
                current: 4
            })
        );
        assert_eq!(
            on(&img, 1, "t", 0, Some(5)),
            Err(LeadershipError::UnknownLeaderEpoch {
                requested: 5,
                current: 4
            })
        );
        // On a follower the epoch is checked first, as Kafka does.
        assert_eq!(
            on(&img, 2, "t", 0, Some(0)),
            Err(LeadershipError::FencedLeaderEpoch {
                requested: 0,
                current: 4
            })
        );
        assert_eq!(
            on(&img, 2, "t", 0, Some(4)),
            Err(LeadershipError::NotLeader)
        );
        // Not hosted: no epoch to compare with.
        assert_eq!(
            on(&img, 3, "t", 0, Some(0)),
            Err(LeadershipError::NotReplica { broker: 3 })
        );
    }

    #[test]
    fn current_leader_names_alive_leaders_only() {
        let img = image();
        assert_eq!(
            current_leader(&img, "t", 0, None),
            CurrentLeader {
                leader_id: 1,
                leader_epoch: 4,
                node: Some(BrokerMeta {
                    node_id: 1,
                    host: "b1".into(),
                    port: 9091,
                    rack: Some("r1".into()),
                }),
            }
        );
        // Broker 3 leads t-1 but is fenced: id and epoch, no endpoint.
        let l = current_leader(&img, "t", 1, None);
        assert_eq!((l.leader_id, l.leader_epoch, l.node), (3, 2, None));
        let l = current_leader(&img, "t", 2, None);
        assert_eq!((l.leader_id, l.leader_epoch, l.node), (NO_LEADER, 7, None));
        let l = current_leader(&img, "nope", 0, None);
        assert_eq!((l.leader_id, l.leader_epoch, l.node), (NO_LEADER, -1, None));
    }
}
