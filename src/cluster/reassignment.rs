//! Partition reassignment (KIP-455) as KRaft's controller does it:
//! AlterPartitionReassignments moves a partition's replicas to a target
//! list in three steps, each a `PartitionChange` record.
//!
//! 1. Growth: `replicas` becomes the target followed by the replicas being
//!    removed, `adding_replicas` = target − current, `removing_replicas` =
//!    current − target (both in broker id order). The ISR and the leader
//!    stay; the added replicas start following the leader.
//! 2. Catch-up: the leader adds each new replica to the ISR once it caught
//!    up (AlterPartition).
//! 3. Completion: the change that leaves every target replica in the ISR
//!    (minus the removed ones) also sets `replicas` = target,
//!    ISR = ISR − removing, clears adding/removing and, when the leader is
//!    being removed, elects the first target replica in the ISR (a replica
//!    list that drops a member bumps the leader epoch, see
//!    [`super::image_apply`]). A reassignment whose target the ISR already
//!    covers (a reorder, a shrink) completes in its first record.
//!
//! A `null` target cancels an ongoing reassignment: the original replicas
//! (`replicas` − `adding_replicas`) come back, the ISR loses the added
//! replicas. Every function is pure, decided against an image.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::metadata::{MetadataImage, PartitionRegistration, NO_LEADER};
use super::records::MetadataRecord;

/// Why a partition's reassignment was refused (Kafka's codes and texts;
/// mapped in `crate::error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum ReassignmentError {
    /// No topic of that name: UNKNOWN_TOPIC_OR_PARTITION (3).
    #[error("Unable to find a topic named {topic}.")]
    UnknownTopic {
        /// The topic asked for.
        topic: String,
    },
    /// The topic has no such partition: UNKNOWN_TOPIC_OR_PARTITION (3).
    #[error("Unable to find partition {topic}:{partition}.")]
    UnknownPartition {
        /// The topic.
        topic: String,
        /// The partition asked for.
        partition: i32,
    },
    /// The target is empty: INVALID_REPLICA_ASSIGNMENT (39).
    #[error("The manual partition assignment includes an empty replica list.")]
    EmptyReplicas,
    /// The target names a broker that is not registered:
    /// INVALID_REPLICA_ASSIGNMENT (39).
    #[error(
        "The manual partition assignment includes broker {broker}, but no such broker is registered."
    )]
    UnregisteredBroker {
        /// The broker id.
        broker: i32,
    },
    /// The target names a broker twice: INVALID_REPLICA_ASSIGNMENT (39).
    #[error("The manual partition assignment includes the broker {broker} more than once.")]
    DuplicateBroker {
        /// The broker id.
        broker: i32,
    },
    /// AlterPartitionReassignments v1 with `allow_replication_factor_change`
    /// false and a target of another length (KIP-860):
    /// INVALID_REPLICATION_FACTOR (38).
    #[error("The replication factor is changed from {from} to {to}")]
    ReplicationFactorChange {
        /// The current replication factor (the ongoing reassignment's
        /// target size while one runs).
        from: usize,
        /// The target's length.
        to: usize,
    },
    /// A cancel of a partition with no reassignment in progress:
    /// NO_REASSIGNMENT_IN_PROGRESS (85).
    #[error("No partition reassignment is in progress.")]
    NoReassignmentInProgress,
    /// A cancel whose ISR holds only added replicas would need an unclean
    /// election and the topic's `unclean.leader.election.enable` is false:
    /// INVALID_REPLICA_ASSIGNMENT (39).
    #[error(
        "Unable to revert partition assignment for {topic}:{partition} because it would require an unclean leader election."
    )]
    UncleanRevert {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
    },
}

/// One partition of an AlterPartitionReassignments request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReassignTarget {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// The target replicas, the preferred leader first; None cancels the
    /// ongoing reassignment.
    pub replicas: Option<Vec<i32>>,
}

/// One partition of a ListPartitionReassignments answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OngoingReassignment {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// Every replica (target first, then the ones being removed).
    pub replicas: Vec<i32>,
    /// Replicas being added.
    pub adding: Vec<i32>,
    /// Replicas being removed.
    pub removing: Vec<i32>,
}

/// A partition's registration as a change wants it (KRaft's
/// `PartitionChangeBuilder` targets).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    replicas: Vec<i32>,
    isr: Vec<i32>,
    adding: Vec<i32>,
    removing: Vec<i32>,
}

/// Takes a partition's replicas, ISR (after an ISR change) and ongoing
/// reassignment; gives the completed (replicas, ISR) when the reassignment
/// is done: the ISR without the removed replicas holds every remaining
/// replica. None when no reassignment runs, or it has to wait (KRaft's
/// `PartitionReassignmentReplicas.maybeCompleteReassignment`).
pub fn completion(
    replicas: &[i32],
    isr: &[i32],
    adding: &[i32],
    removing: &[i32],
) -> Option<(Vec<i32>, Vec<i32>)> {
    if adding.is_empty() && removing.is_empty() {
        return None;
    }
    let isr: Vec<i32> = isr
        .iter()
        .copied()
        .filter(|r| !removing.contains(r))
        .collect();
    let replicas: Vec<i32> = replicas
        .iter()
        .copied()
        .filter(|r| !removing.contains(r))
        .collect();
    if isr.is_empty() || replicas.is_empty() || !replicas.iter().all(|r| isr.contains(r)) {
        return None;
    }
    Some((replicas, isr))
}

/// Takes a registration with a reassignment in progress; gives the
/// (replicas, ISR) a cancel reverts to and whether that ISR needs an
/// unclean election (every ISR member was being added: the first original
/// replica then is the ISR), as KRaft's `PartitionReassignmentRevert`.
pub fn revert(p: &PartitionRegistration) -> (Vec<i32>, Vec<i32>, bool) {
    let replicas: Vec<i32> = p
        .replicas
        .iter()
        .copied()
        .filter(|r| !p.adding_replicas.contains(r))
        .collect();
    let mut isr: Vec<i32> = p
        .isr
        .iter()
        .copied()
        .filter(|r| !p.adding_replicas.contains(r))
        .collect();
    let mut unclean = false;
    if isr.is_empty() {
        if let Some(first) = replicas.first() {
            isr.push(*first);
            unclean = true;
        }
    }
    (replicas, isr, unclean)
}

/// The record turning `p` into `t` (completing the reassignment when the
/// ISR allows, electing a new leader when the current one is not an alive
/// member of the new ISR), or None when nothing changes.
fn build(
    image: &MetadataImage,
    topic_id: Uuid,
    index: i32,
    p: &PartitionRegistration,
    mut t: Target,
) -> Option<MetadataRecord> {
    if let Some((replicas, isr)) = completion(&t.replicas, &t.isr, &t.adding, &t.removing) {
        t = Target {
            replicas,
            isr,
            adding: Vec::new(),
            removing: Vec::new(),
        };
    }
    let valid = |r: i32| t.isr.contains(&r) && image.is_alive(r);
    let leader = if p.leader != NO_LEADER && valid(p.leader) {
        p.leader
    } else {
        t.replicas
            .iter()
            .copied()
            .find(|r| valid(*r))
            .unwrap_or(NO_LEADER)
    };
    let changed = |new: &Vec<i32>, old: &Vec<i32>| (new != old).then(|| new.clone());
    let record = MetadataRecord::PartitionChange {
        topic_id,
        partition_id: index,
        isr: changed(&t.isr, &p.isr),
        // A completed move has every target replica in the ISR: no
        // replica is waiting in the ELR any more (KIP-966).
        elr: (leader != NO_LEADER && !p.elr.is_empty() && t.adding.is_empty()).then(Vec::new),
        last_known_elr: (leader != NO_LEADER && !p.last_known_elr.is_empty()).then(Vec::new),
        leader: (leader != p.leader).then_some(leader),
        replicas: changed(&t.replicas, &p.replicas),
        adding_replicas: changed(&t.adding, &p.adding_replicas),
        removing_replicas: changed(&t.removing, &p.removing_replicas),
    };
    match &record {
        MetadataRecord::PartitionChange {
            isr: None,
            leader: None,
            replicas: None,
            adding_replicas: None,
            removing_replicas: None,
            ..
        } => None,
        _ => Some(record),
    }
}

/// The record of an ISR change the leader asked for (`isr`, already
/// checked by AlterPartition) on partition `index` of `topic_id` when it
/// completes an ongoing reassignment: the final replicas, the ISR without
/// the removed replicas and a new leader if the old one was removed. None
/// when it completes none (the ISR/ELR rules of `elr.rs` make that record).
pub fn isr_change(
    image: &MetadataImage,
    topic_id: Uuid,
    index: i32,
    p: &PartitionRegistration,
    isr: Vec<i32>,
) -> Option<MetadataRecord> {
    completion(&p.replicas, &isr, &p.adding_replicas, &p.removing_replicas)?;
    let t = Target {
        replicas: p.replicas.clone(),
        isr,
        adding: p.adding_replicas.clone(),
        removing: p.removing_replicas.clone(),
    };
    build(image, topic_id, index, p, t)
}

/// Checks a target replica list (Kafka's `validateManualPartitionAssignment`:
/// not empty, every broker registered, none twice; in broker id order).
fn validate(image: &MetadataImage, target: &[i32]) -> Result<(), ReassignmentError> {
    if target.is_empty() {
        return Err(ReassignmentError::EmptyReplicas);
    }
    let mut sorted = target.to_vec();
    sorted.sort_unstable();
    let mut prev = None;
    for b in sorted {
        if !image.registrations.contains_key(&b) {
            return Err(ReassignmentError::UnregisteredBroker { broker: b });
        }
        if prev == Some(b) {
            return Err(ReassignmentError::DuplicateBroker { broker: b });
        }
        prev = Some(b);
    }
    Ok(())
}

/// `a` − `b`, in broker id order.
fn minus(a: &[i32], b: &[i32]) -> Vec<i32> {
    let mut d: Vec<i32> = a.iter().copied().filter(|r| !b.contains(r)).collect();
    d.sort_unstable();
    d.dedup();
    d
}

/// Decides one partition of AlterPartitionReassignments against `image`:
/// the record to commit (None: nothing to change) or why not.
pub fn alter_one(
    image: &MetadataImage,
    target: &ReassignTarget,
    allow_replication_factor_change: bool,
) -> Result<Option<MetadataRecord>, ReassignmentError> {
    let topic = image
        .topic(&target.topic)
        .ok_or_else(|| ReassignmentError::UnknownTopic {
            topic: target.topic.clone(),
        })?;
    let p =
        topic
            .partition(target.partition)
            .ok_or_else(|| ReassignmentError::UnknownPartition {
                topic: target.topic.clone(),
                partition: target.partition,
            })?;
    let Some(wanted) = &target.replicas else {
        if !p.is_reassigning() {
            return Err(ReassignmentError::NoReassignmentInProgress);
        }
        let (replicas, isr, unclean) = revert(p);
        let unclean_enabled = topic
            .configs
            .get("unclean.leader.election.enable")
            .is_some_and(|v| v == "true");
        if unclean && !unclean_enabled {
            return Err(ReassignmentError::UncleanRevert {
                topic: target.topic.clone(),
                partition: target.partition,
            });
        }
        let t = Target {
            replicas,
            isr,
            adding: Vec::new(),
            removing: Vec::new(),
        };
        return Ok(build(image, topic.id, target.partition, p, t));
    };
    validate(image, wanted)?;
    if !allow_replication_factor_change {
        let from = p.replicas.len() - p.removing_replicas.len();
        if from != wanted.len() {
            return Err(ReassignmentError::ReplicationFactorChange {
                from,
                to: wanted.len(),
            });
        }
    }
    // From the current replicas, an ongoing reassignment's included (as
    // Kafka computes it: a new target replaces an ongoing one, and the
    // replicas it no longer wants are removed at its completion).
    let removing = minus(&p.replicas, wanted);
    let adding = minus(wanted, &p.replicas);
    let mut replicas = wanted.clone();
    replicas.extend(removing.iter().copied());
    let isr = p.isr.clone();
    let t = Target {
        replicas,
        isr,
        adding,
        removing,
    };
    Ok(build(image, topic.id, target.partition, p, t))
}

/// Decides AlterPartitionReassignments: each partition in turn against the
/// image with the records decided before it applied; gives the records and
/// each partition's outcome, in request order.
pub fn alter(
    image: &MetadataImage,
    targets: &[ReassignTarget],
    allow_replication_factor_change: bool,
) -> (Vec<MetadataRecord>, Vec<Result<(), ReassignmentError>>) {
    let mut scratch = image.clone();
    let mut records = Vec::new();
    let mut results = Vec::new();
    for t in targets {
        match alter_one(&scratch, t, allow_replication_factor_change) {
            Ok(Some(r)) => {
                scratch = scratch.apply(scratch.offset, std::slice::from_ref(&r));
                records.push(r);
                results.push(Ok(()));
            }
            Ok(None) => results.push(Ok(())),
            Err(e) => results.push(Err(e)),
        }
    }
    (records, results)
}

/// ListPartitionReassignments: the ongoing reassignments of the asked
/// (topic, partitions) pairs, or of every partition with `None`, by topic
/// name then partition. Unknown topics and partitions are left out (as
/// Kafka's controller does).
pub fn list(
    image: &MetadataImage,
    asked: Option<&[(String, Vec<i32>)]>,
) -> Vec<OngoingReassignment> {
    let ongoing = |topic: &str, i: i32, p: &PartitionRegistration| {
        p.is_reassigning().then(|| OngoingReassignment {
            topic: topic.to_string(),
            partition: i,
            replicas: p.replicas.clone(),
            adding: p.adding_replicas.clone(),
            removing: p.removing_replicas.clone(),
        })
    };
    match asked {
        None => image
            .topics
            .values()
            .flat_map(|t| {
                t.assignments
                    .iter()
                    .enumerate()
                    .filter_map(|(i, p)| ongoing(&t.name, i as i32, p))
                    .collect::<Vec<_>>()
            })
            .collect(),
        Some(asked) => asked
            .iter()
            .flat_map(|(name, parts)| {
                let t = image.topic(name);
                parts
                    .iter()
                    .filter_map(|i| {
                        t.and_then(|t| t.partition(*i))
                            .and_then(|p| ongoing(name, *i, p))
                    })
                    .collect::<Vec<_>>()
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests;
