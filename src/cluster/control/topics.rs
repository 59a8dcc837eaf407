//! The controller's decisions on topics: placement of new partitions'
//! replicas, explicit assignments checked, CreateTopics, CreatePartitions and
//! AlterConfigs turned into records (no I/O; tested with the rest of
//! [`decide`](super::decide)).

use super::*;

fn candidates(image: &MetadataImage) -> Vec<Candidate> {
    image
        .registrations
        .values()
        .filter(|b| b.is_alive())
        .map(|b| Candidate {
            id: b.node_id,
            rack: b.rack.clone(),
        })
        .collect()
}

fn placement_error(e: PlacementError, rf: i16) -> MetadataError {
    match e {
        PlacementError::TooFewBrokers { brokers, .. } => MetadataError::InvalidReplicationFactor {
            requested: rf,
            brokers: brokers as i32,
        },
        PlacementError::MixedRacks => {
            MetadataError::InvalidReplicaAssignment(InvalidAssignment::MixedRacks)
        }
    }
}

/// Checks explicit replica lists: each names distinct, registered brokers,
/// and all have one length.
fn check_assignments(image: &MetadataImage, lists: &[Vec<i32>]) -> Result<i16, MetadataError> {
    let rf = lists.first().map_or(0, Vec::len);
    for l in lists {
        if l.is_empty() || l.len() != rf {
            return Err(InvalidAssignment::UnevenReplicas.into());
        }
        let mut seen = l.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != l.len() {
            return Err(InvalidAssignment::DuplicateBroker.into());
        }
        if let Some(b) = l.iter().find(|b| !image.registrations.contains_key(b)) {
            return Err(InvalidAssignment::UnknownBroker { broker: *b }.into());
        }
    }
    Ok(rf as i16)
}

fn registration(replicas: Vec<i32>, image: &MetadataImage) -> PartitionRegistration {
    let leader = replicas
        .iter()
        .copied()
        .find(|r| image.is_alive(*r))
        .unwrap_or(crate::cluster::metadata::NO_LEADER);
    PartitionRegistration {
        isr: replicas.clone(),
        replicas,
        elr: Vec::new(),
        last_known_elr: Vec::new(),
        leader,
        leader_epoch: 0,
        partition_epoch: 0,
        adding_replicas: Vec::new(),
        removing_replicas: Vec::new(),
    }
}

fn check_open_files(image: &MetadataImage, extra: i64, rules: &Rules) -> Result<(), MetadataError> {
    let Some(limit) = rules.open_files_limit else {
        return Ok(());
    };
    let existing: i64 = image.topics.values().map(|t| i64::from(t.partitions)).sum();
    let needed = (existing + extra) * 3 + 1024;
    if needed > limit {
        return Err(InvalidPartitions::OpenFiles {
            partitions: existing + extra,
            needed,
            limit,
        }
        .into());
    }
    Ok(())
}

/// Decides one CreateTopics topic against `image` (which already holds the
/// topics decided before it in the same request).
pub(super) fn create_topic(
    image: &MetadataImage,
    t: &NewTopic,
    rules: &Rules,
    dice: &mut dyn Dice,
) -> Result<(CreatedTopic, Vec<MetadataRecord>), MetadataError> {
    crate::cluster::topic_name::validate(&t.name)?;
    if image.topic(&t.name).is_some() {
        return Err(MetadataError::TopicAlreadyExists {
            topic: t.name.clone(),
            copy: None,
        });
    }
    // Kafka: '.' and '_' collide in metric names, so such topics cannot coexist.
    let canonical = t.name.replace('.', "_");
    if let Some(other) = image
        .topics
        .keys()
        .find(|n| n.replace('.', "_") == canonical)
    {
        return Err(InvalidTopic::Collides {
            name: t.name.clone(),
            existing: other.to_string(),
        }
        .into());
    }
    let (lists, rf) = match &t.assignments {
        Some(lists) => {
            let rf = check_assignments(image, lists)?;
            (lists.clone(), rf)
        }
        None => {
            if !(1..=MAX_PARTITIONS).contains(&t.partitions) {
                return Err(InvalidPartitions::OutOfRange {
                    requested: t.partitions,
                    min: 1,
                    max: MAX_PARTITIONS,
                }
                .into());
            }
            let brokers = candidates(image);
            let n = brokers.len().max(1);
            let lists = placement::place(
                &brokers,
                0,
                t.partitions,
                t.replication_factor,
                dice.below(n),
                dice.below(n),
            )
            .map_err(|e| placement_error(e, t.replication_factor))?;
            (lists, t.replication_factor)
        }
    };
    if lists.is_empty() || lists.len() > MAX_PARTITIONS as usize {
        return Err(InvalidPartitions::OutOfRange {
            requested: lists.len() as i32,
            min: 1,
            max: MAX_PARTITIONS,
        }
        .into());
    }
    check_open_files(image, lists.len() as i64, rules)?;
    let id = match t.topic_id {
        Some(id) if image.topic_by_id(&id).is_some() => {
            return Err(crate::cluster::error::InvalidRequest::TopicIdTaken {
                topic: t.name.clone(),
                topic_id: id,
                other: image
                    .topic_by_id(&id)
                    .map(|o| o.name.to_string())
                    .unwrap_or_default(),
            }
            .into())
        }
        Some(id) => id,
        None => dice.topic_id(),
    };
    let mut records = vec![MetadataRecord::Topic {
        name: t.name.clone(),
        topic_id: id,
    }];
    for (k, v) in &t.configs {
        records.push(MetadataRecord::Config {
            resource: ConfigResource::Topic(t.name.clone()),
            name: k.clone(),
            value: Some(v.clone()),
        });
    }
    let partitions = lists.len() as i32;
    for (i, replicas) in lists.into_iter().enumerate() {
        records.push(MetadataRecord::Partition {
            topic_id: id,
            partition_id: i as i32,
            registration: registration(replicas, image),
        });
    }
    Ok((
        CreatedTopic {
            id,
            partitions,
            replication_factor: rf,
            configs: t.configs.clone(),
        },
        records,
    ))
}

pub(super) fn create_partitions(
    image: &MetadataImage,
    inc: &PartitionIncrease,
    rules: &Rules,
    dice: &mut dyn Dice,
) -> Result<Vec<MetadataRecord>, MetadataError> {
    let current: &Arc<TopicMeta> = image
        .topic(&inc.topic)
        .ok_or(MetadataError::UnknownTopicOrPartition)?;
    if inc.count <= current.partitions {
        return Err(InvalidPartitions::NotAnIncrease {
            current: current.partitions,
            requested: inc.count,
        }
        .into());
    }
    if inc.count > MAX_PARTITIONS {
        return Err(InvalidPartitions::TooMany {
            requested: inc.count,
            max: MAX_PARTITIONS,
        }
        .into());
    }
    let added = inc.count - current.partitions;
    let rf = current
        .assignments
        .first()
        .map_or(1, |p| p.replicas.len() as i16);
    let lists = match &inc.assignments {
        Some(lists) => {
            if lists.len() != added as usize {
                return Err(InvalidAssignment::CountMismatch {
                    given: lists.len() as i32,
                    added,
                }
                .into());
            }
            check_assignments(image, lists)?;
            lists.clone()
        }
        None => {
            let brokers = candidates(image);
            let n = brokers.len().max(1);
            placement::place(
                &brokers,
                current.partitions,
                added,
                rf,
                dice.below(n),
                dice.below(n),
            )
            .map_err(|e| placement_error(e, rf))?
        }
    };
    check_open_files(image, i64::from(added), rules)?;
    Ok(lists
        .into_iter()
        .enumerate()
        .map(|(i, replicas)| MetadataRecord::Partition {
            topic_id: current.id,
            partition_id: current.partitions + i as i32,
            registration: registration(replicas, image),
        })
        .collect())
}

pub(super) fn alter_configs(
    image: &MetadataImage,
    topic: &str,
    configs: &BTreeMap<String, String>,
) -> Result<Vec<MetadataRecord>, MetadataError> {
    let current = image
        .topic(topic)
        .ok_or(MetadataError::UnknownTopicOrPartition)?;
    for (k, v) in configs {
        crate::cluster::topic_config::validate(k, v)?;
    }
    let res = || ConfigResource::Topic(topic.to_string());
    let mut records = Vec::new();
    for (k, v) in configs {
        if current.configs.get(k) != Some(v) {
            records.push(MetadataRecord::Config {
                resource: res(),
                name: k.clone(),
                value: Some(v.clone()),
            });
        }
    }
    for k in current.configs.keys() {
        if !configs.contains_key(k) {
            records.push(MetadataRecord::Config {
                resource: res(),
                name: k.clone(),
                value: None,
            });
        }
    }
    Ok(records)
}
