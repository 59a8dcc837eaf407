//! What the active controller is asked and what it decides. A
//! [`ControllerRequest`] comes from this node's shards or, forwarded, from
//! another broker (admin requests: CreateTopics, DeleteTopics,
//! CreatePartitions, configs; broker lifecycle: registration, heartbeats;
//! producer id blocks). [`decide`] checks it against the current image and
//! gives the records to commit and the reply; it does no I/O, so every rule
//! is unit-tested here. `quorum` commits the records and answers once they
//! are applied.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::election;
use super::error::{InvalidAssignment, InvalidPartitions, InvalidTopic};
use super::metadata::{Endpoint, MetadataImage, PartitionRegistration, TopicMeta};
use super::placement::{self, Candidate, PlacementError};
use super::records::{ConfigResource, MetadataRecord};
use crate::cluster::error::MetadataError;
use topics::{alter_configs, create_partitions, create_topic};

/// Most partitions a topic may have (CreateTopics, CreatePartitions).
pub const MAX_PARTITIONS: i32 = 1_000_000;

/// Producer ids handed out per AllocateProducerIds (Kafka's block size).
pub const PRODUCER_ID_BLOCK: i64 = 1000;

/// One topic of a CreateTopics request, with the broker defaults applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewTopic {
    /// Topic name.
    pub name: String,
    /// Partition count (ignored with `assignments`).
    pub partitions: i32,
    /// Replication factor (ignored with `assignments`).
    pub replication_factor: i16,
    /// Explicit replica lists, one per partition.
    pub assignments: Option<Vec<Vec<i32>>>,
    /// Topic configs (already validated).
    pub configs: BTreeMap<String, String>,
    /// Keep the topic id (import of existing partition directories).
    pub topic_id: Option<Uuid>,
}

/// A created (or, validate-only, creatable) topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreatedTopic {
    /// Topic id.
    pub id: Uuid,
    /// Partitions.
    pub partitions: i32,
    /// Replication factor.
    pub replication_factor: i16,
    /// Its configs.
    pub configs: BTreeMap<String, String>,
}

/// A CreatePartitions entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionIncrease {
    /// Topic name.
    pub topic: String,
    /// The new partition count.
    pub count: i32,
    /// Replica lists of the new partitions, when given.
    pub assignments: Option<Vec<Vec<i32>>>,
}

/// A block of producer ids (AllocateProducerIds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerIdBlock {
    /// The first id.
    pub first: i64,
    /// How many ids.
    pub size: i64,
}

/// A heartbeat's answer (Kafka's BrokerHeartbeatResponse).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeartbeatReply {
    /// The broker has applied the log up to its registration.
    pub is_caught_up: bool,
    /// The broker is fenced.
    pub is_fenced: bool,
    /// Controlled shutdown: every partition moved away, the broker may stop.
    pub should_shutdown: bool,
}

/// Why the controller refuses a broker-lifecycle request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum LifecycleError {
    /// STALE_BROKER_EPOCH (77): the broker's epoch is not its registration's.
    #[error("broker {broker} epoch {epoch} is stale (registered epoch {current})")]
    StaleBrokerEpoch {
        /// Broker id.
        broker: i32,
        /// The epoch sent.
        epoch: i64,
        /// The registered epoch.
        current: i64,
    },
    /// BROKER_ID_NOT_REGISTERED (102).
    #[error("broker {broker} is not registered")]
    NotRegistered {
        /// Broker id.
        broker: i32,
    },
    /// DUPLICATE_BROKER_REGISTRATION (101): another live process has the id.
    #[error("broker id {broker} is in use by another live process (incarnation {other})")]
    DuplicateRegistration {
        /// Broker id.
        broker: i32,
        /// The live incarnation.
        other: Uuid,
    },
    /// INCONSISTENT_CLUSTER_ID (104).
    #[error("cluster id {given} is not this cluster's ({ours})")]
    InconsistentClusterId {
        /// The broker's cluster id.
        given: String,
        /// The controller's.
        ours: String,
    },
}

/// A request to the active controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ControllerRequest {
    /// CreateTopics (and auto-creation, and internal topics).
    CreateTopics {
        /// The topics.
        topics: Vec<NewTopic>,
        /// Check only.
        validate_only: bool,
    },
    /// DeleteTopics, by name.
    DeleteTopics {
        /// Topic names.
        names: Vec<String>,
    },
    /// CreatePartitions.
    CreatePartitions {
        /// The increases.
        topics: Vec<PartitionIncrease>,
        /// Check only.
        validate_only: bool,
    },
    /// AlterConfigs / IncrementalAlterConfigs on a topic: the full new set.
    AlterTopicConfigs {
        /// Topic name.
        topic: String,
        /// Every override after the change.
        configs: BTreeMap<String, String>,
        /// Check only.
        validate_only: bool,
    },
    /// IncrementalAlterConfigs on a group (KIP-848's group configs, checked
    /// by the asking broker): the full new set.
    AlterGroupConfigs {
        /// Group id.
        group: String,
        /// Every override after the change.
        configs: BTreeMap<String, String>,
        /// Check only.
        validate_only: bool,
    },
    /// AllocateProducerIds.
    AllocateProducerIds {
        /// The asking broker.
        broker_id: i32,
        /// Its epoch.
        broker_epoch: i64,
    },
    /// Never hand out producer ids below `next_producer_id` (ids found in
    /// imported partitions, or the block file of an earlier version).
    ReserveProducerIds {
        /// The first id that may be handed out.
        next_producer_id: i64,
    },
    /// BrokerRegistration.
    RegisterBroker {
        /// `node.id`.
        broker_id: i32,
        /// The process's incarnation id.
        incarnation_id: Uuid,
        /// Its `cluster.id`.
        cluster_id: String,
        /// Client endpoints.
        endpoints: Vec<Endpoint>,
        /// `broker.rack`.
        rack: Option<String>,
        /// The broker epoch this broker had when it last shut down cleanly
        /// (KIP-966's `PreviousBrokerEpoch`); None after an unclean
        /// shutdown (or a first start). Another value than the registered
        /// epoch removes the broker from every ELR.
        #[serde(default)]
        previous_broker_epoch: Option<i64>,
    },
    /// AlterPartition: a leader's ISR change (KIP-497).
    AlterPartition(super::alter_partition::IsrAsk),
    /// ElectLeaders (KIP-460): the partitions, None for every one.
    ElectLeaders {
        /// Preferred or unclean.
        kind: election::ElectionType,
        /// (topic, partition) pairs; None: every partition.
        partitions: Option<Vec<(String, i32)>>,
    },
    /// AlterPartitionReassignments (KIP-455): each partition's target
    /// replicas, or None to cancel.
    AlterPartitionReassignments {
        /// The partitions, in request order.
        targets: Vec<super::reassignment::ReassignTarget>,
        /// v1 (KIP-860): false refuses a target of another length.
        allow_replication_factor_change: bool,
    },
    /// ListPartitionReassignments: (topic, partitions) pairs, None for all.
    ListPartitionReassignments {
        /// The asked partitions.
        topics: Option<Vec<(String, Vec<i32>)>>,
    },
    /// CreateAcls: the ACLs to create.
    CreateAcls {
        /// The ACLs, in request order.
        acls: Vec<crate::acl::model::AclBinding>,
    },
    /// DeleteAcls: the filters whose matching ACLs are deleted.
    DeleteAcls {
        /// The filters, in request order.
        filters: Vec<crate::acl::model::AclFilter>,
    },
    /// AlterClientQuotas (KIP-546): each entity's changes.
    AlterClientQuotas {
        /// The entities' changes, in request order.
        alterations: Vec<quota::QuotaAlteration>,
        /// Check only.
        validate_only: bool,
    },
    /// The first SCRAM credentials of `fjord format --add-scram`: written
    /// for each user and mechanism that has none yet.
    BootstrapScram {
        /// The credentials.
        credentials: Vec<super::bootstrap_scram::BootstrapCredential>,
    },
    /// UpdateFeatures (KIP-584): all updates or none ([`features`]).
    UpdateFeatures {
        /// The updates, in request order.
        updates: Vec<features::FeatureUpdate>,
        /// Check only.
        validate_only: bool,
    },
    /// The levels a new cluster finalizes, written only before any.
    BootstrapFeatures(std::collections::BTreeMap<String, i16>),
    /// AlterUserScramCredentials (KIP-554).
    AlterUserScramCredentials {
        /// Credentials to delete.
        deletions: Vec<scram::ScramDeletion>,
        /// Credentials to set.
        upsertions: Vec<scram::ScramUpsertion>,
    },
    /// BrokerHeartbeat.
    BrokerHeartbeat {
        /// Broker id.
        broker_id: i32,
        /// Its epoch.
        broker_epoch: i64,
        /// The metadata offset it has applied.
        metadata_offset: u64,
        /// It asks to be fenced.
        want_fence: bool,
        /// It asks for controlled shutdown.
        want_shutdown: bool,
    },
}

/// The controller's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ControllerReply {
    /// Per topic, in request order.
    CreateTopics(Vec<Result<CreatedTopic, MetadataError>>),
    /// Per topic, in request order: the deleted topic's id.
    DeleteTopics(Vec<Result<Uuid, MetadataError>>),
    /// Per topic, in request order.
    CreatePartitions(Vec<Result<(), MetadataError>>),
    /// The change's outcome.
    AlterTopicConfigs(Result<(), MetadataError>),
    /// The group config change is in place.
    AlterGroupConfigs,
    /// The block.
    ProducerIds(Result<ProducerIdBlock, LifecycleError>),
    /// The reservation is in place.
    Reserved,
    /// The broker epoch.
    RegisterBroker(Result<i64, LifecycleError>),
    /// The ISR change is committed (or was already in place).
    AlterPartition(Result<(), super::alter_partition::AlterPartitionError>),
    /// Each partition's election, in request order.
    ElectLeaders(Vec<election::ElectionOutcome>),
    /// The heartbeat's state.
    BrokerHeartbeat(Result<HeartbeatReply, LifecycleError>),
    /// Each partition's outcome, in request order.
    AlterPartitionReassignments(Vec<Result<(), super::reassignment::ReassignmentError>>),
    /// The ongoing reassignments asked for.
    ListPartitionReassignments(Vec<super::reassignment::OngoingReassignment>),
    /// Per user, in order of first appearance in the request.
    AlterUserScramCredentials(scram::UserResults),
    /// How many bootstrap credentials were written.
    BootstrapScram(usize),
    /// The whole UpdateFeatures' outcome.
    UpdateFeatures(Result<(), features::FeatureUpdateError>),
    /// How many bootstrap levels were written.
    BootstrapFeatures(usize),
    /// Per ACL, in request order.
    CreateAcls(Vec<Result<(), acl::AclError>>),
    /// Per filter, in request order: the ACLs it matched (and deleted).
    DeleteAcls(Vec<Vec<crate::acl::model::AclBinding>>),
    /// Per entity, in order of first appearance.
    AlterClientQuotas(quota::EntityResults),
}

/// What [`decide`] gives: records to commit (maybe none) and the reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Records to commit, in one log entry.
    pub records: Vec<MetadataRecord>,
    /// The reply, sent once the records are applied. A `RegisterBroker`
    /// reply's epoch is filled in with the entry's offset then.
    pub reply: ControllerReply,
}

/// Random choices of the controller (stripes' start), injectable for tests.
pub trait Dice {
    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize;
    /// A new topic id.
    fn topic_id(&mut self) -> Uuid;
}

/// The controller's dice: random.
#[derive(Debug, Default)]
pub struct RandomDice;

impl Dice for RandomDice {
    fn below(&mut self, n: usize) -> usize {
        use rand::RngExt;
        rand::rng().random_range(0..n.max(1))
    }
    fn topic_id(&mut self) -> Uuid {
        Uuid::new_v4()
    }
}

/// The settings the decisions depend on.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// `broker.session.timeout.ms`.
    pub session_timeout: Duration,
    /// Open-files limit (`ulimit -n`) partitions are checked against; None:
    /// not checked.
    pub open_files_limit: Option<i64>,
    /// The cluster-level `min.insync.replicas` and
    /// `unclean.leader.election.enable` elections and the ELR follow.
    pub election: super::elr::ElectionRules,
    /// This controller's `node.id` (Kafka's texts name it).
    pub node_id: i32,
}

fn check_epoch(image: &MetadataImage, broker: i32, epoch: i64) -> Result<(), LifecycleError> {
    match image.registrations.get(&broker) {
        None => Err(LifecycleError::NotRegistered { broker }),
        Some(b) if b.epoch != epoch => Err(LifecycleError::StaleBrokerEpoch {
            broker,
            epoch,
            current: b.epoch,
        }),
        Some(_) => Ok(()),
    }
}

/// Decides `items` one after the other, each against `image` with the
/// records decided before it applied (two topics of one CreateTopics are
/// checked against each other); gives every item's records and its result.
fn each_in_turn<T, R>(
    image: &MetadataImage,
    items: &[T],
    mut decide_one: impl FnMut(&MetadataImage, &T) -> Result<(R, Vec<MetadataRecord>), MetadataError>,
) -> (Vec<MetadataRecord>, Vec<Result<R, MetadataError>>) {
    let mut scratch = image.clone();
    let mut records = Vec::new();
    let mut results = Vec::new();
    for item in items {
        match decide_one(&scratch, item) {
            Ok((r, recs)) => {
                scratch = scratch.apply(scratch.offset, &recs);
                records.extend(recs);
                results.push(Ok(r));
            }
            Err(e) => results.push(Err(e)),
        }
    }
    (records, results)
}

/// Decides `req` against `image` at `now`.
pub fn decide(
    image: &MetadataImage,
    req: &ControllerRequest,
    liveness: &mut Liveness,
    now: Instant,
    rules: &Rules,
    dice: &mut dyn Dice,
) -> Decision {
    match req {
        ControllerRequest::CreateTopics {
            topics,
            validate_only,
        } => {
            let (records, results) =
                each_in_turn(image, topics, |img, t| create_topic(img, t, rules, dice));
            Decision {
                records: if *validate_only { Vec::new() } else { records },
                reply: ControllerReply::CreateTopics(results),
            }
        }
        ControllerRequest::DeleteTopics { names } => {
            let mut records = Vec::new();
            let results = names
                .iter()
                .map(|n| match image.topic(n) {
                    Some(t)
                        if !records.contains(&MetadataRecord::RemoveTopic { topic_id: t.id }) =>
                    {
                        records.push(MetadataRecord::RemoveTopic { topic_id: t.id });
                        Ok(t.id)
                    }
                    Some(t) => Ok(t.id),
                    None => Err(MetadataError::UnknownTopicOrPartition),
                })
                .collect();
            Decision {
                records,
                reply: ControllerReply::DeleteTopics(results),
            }
        }
        ControllerRequest::CreatePartitions {
            topics,
            validate_only,
        } => {
            let (records, results) = each_in_turn(image, topics, |img, inc| {
                create_partitions(img, inc, rules, dice).map(|recs| ((), recs))
            });
            Decision {
                records: if *validate_only { Vec::new() } else { records },
                reply: ControllerReply::CreatePartitions(results),
            }
        }
        ControllerRequest::AlterTopicConfigs {
            topic,
            configs,
            validate_only,
        } => match alter_configs(image, topic, configs) {
            Ok(mut records) => {
                // A new `min.insync.replicas` at or below the ISR clears the
                // ELR (KIP-966); `unclean.leader.election.enable` turned on
                // elects a leader where nothing else can (as Kafka does).
                if !records.is_empty() {
                    let after = image.apply(image.offset, &records);
                    records.extend(election::on_topic_config_change(
                        &after,
                        &rules.election,
                        topic,
                    ));
                }
                Decision {
                    records: if *validate_only { Vec::new() } else { records },
                    reply: ControllerReply::AlterTopicConfigs(Ok(())),
                }
            }
            Err(e) => Decision {
                records: Vec::new(),
                reply: ControllerReply::AlterTopicConfigs(Err(e)),
            },
        },
        ControllerRequest::AlterGroupConfigs {
            group,
            configs,
            validate_only,
        } => Decision {
            records: if *validate_only {
                Vec::new()
            } else {
                group_config_records(image, group, configs)
            },
            reply: ControllerReply::AlterGroupConfigs,
        },
        ControllerRequest::AllocateProducerIds {
            broker_id,
            broker_epoch,
        } => match check_epoch(image, *broker_id, *broker_epoch) {
            Err(e) => Decision {
                records: Vec::new(),
                reply: ControllerReply::ProducerIds(Err(e)),
            },
            Ok(()) => {
                let first = image.next_producer_id;
                Decision {
                    records: vec![MetadataRecord::ProducerIds {
                        broker_id: *broker_id,
                        broker_epoch: *broker_epoch,
                        next_producer_id: first + PRODUCER_ID_BLOCK,
                    }],
                    reply: ControllerReply::ProducerIds(Ok(ProducerIdBlock {
                        first,
                        size: PRODUCER_ID_BLOCK,
                    })),
                }
            }
        },
        ControllerRequest::AlterPartition(ask) => {
            match super::alter_partition::decide(image, &rules.election, ask) {
                Ok(records) => Decision {
                    records,
                    reply: ControllerReply::AlterPartition(Ok(())),
                },
                Err(e) => Decision {
                    records: Vec::new(),
                    reply: ControllerReply::AlterPartition(Err(e)),
                },
            }
        }
        ControllerRequest::ElectLeaders { kind, partitions } => {
            let (records, outcomes) =
                election::elect_leaders(image, &rules.election, *kind, partitions.as_deref());
            Decision {
                records,
                reply: ControllerReply::ElectLeaders(outcomes),
            }
        }
        ControllerRequest::CreateAcls { acls } => {
            let (records, results) = acl::create(image, acls, &mut || dice.topic_id());
            Decision {
                records,
                reply: ControllerReply::CreateAcls(results),
            }
        }
        ControllerRequest::DeleteAcls { filters } => {
            let (records, matched) = acl::delete(image, filters);
            Decision {
                records,
                reply: ControllerReply::DeleteAcls(matched),
            }
        }
        ControllerRequest::AlterClientQuotas {
            alterations,
            validate_only,
        } => {
            let (records, results) = quota::alter(image, alterations, *validate_only);
            Decision {
                records,
                reply: ControllerReply::AlterClientQuotas(results),
            }
        }
        ControllerRequest::UpdateFeatures {
            updates,
            validate_only,
        } => features::decide_update(image, updates, *validate_only, rules.node_id),
        ControllerRequest::BootstrapFeatures(levels) => features::decide_bootstrap(image, levels),
        ControllerRequest::BootstrapScram { credentials } => {
            let records = scram::bootstrap(image, credentials);
            Decision {
                reply: ControllerReply::BootstrapScram(records.len()),
                records,
            }
        }
        ControllerRequest::AlterUserScramCredentials {
            deletions,
            upsertions,
        } => {
            let (records, results) = scram::alter(image, deletions, upsertions);
            Decision {
                records,
                reply: ControllerReply::AlterUserScramCredentials(results),
            }
        }
        ControllerRequest::AlterPartitionReassignments {
            targets,
            allow_replication_factor_change,
        } => {
            let (records, results) =
                super::reassignment::alter(image, targets, *allow_replication_factor_change);
            Decision {
                records,
                reply: ControllerReply::AlterPartitionReassignments(results),
            }
        }
        ControllerRequest::ListPartitionReassignments { topics } => Decision {
            records: Vec::new(),
            reply: ControllerReply::ListPartitionReassignments(super::reassignment::list(
                image,
                topics.as_deref(),
            )),
        },
        ControllerRequest::ReserveProducerIds { next_producer_id } => Decision {
            records: if *next_producer_id > image.next_producer_id {
                vec![MetadataRecord::ProducerIds {
                    broker_id: -1,
                    broker_epoch: -1,
                    next_producer_id: *next_producer_id,
                }]
            } else {
                Vec::new()
            },
            reply: ControllerReply::Reserved,
        },
        ControllerRequest::RegisterBroker {
            broker_id,
            incarnation_id,
            cluster_id,
            endpoints,
            rack,
            previous_broker_epoch,
        } => {
            if *cluster_id != image.cluster_id {
                return Decision {
                    records: Vec::new(),
                    reply: ControllerReply::RegisterBroker(Err(
                        LifecycleError::InconsistentClusterId {
                            given: cluster_id.clone(),
                            ours: image.cluster_id.clone(),
                        },
                    )),
                };
            }
            if let Some(b) = image.registrations.get(broker_id) {
                // The same process again (a retried registration) keeps its
                // epoch; another process with a live session is refused.
                if b.incarnation_id == *incarnation_id {
                    liveness.beat(*broker_id, now);
                    return Decision {
                        records: Vec::new(),
                        reply: ControllerReply::RegisterBroker(Ok(b.epoch)),
                    };
                }
                if !b.fenced && liveness.heard_within(*broker_id, now, rules.session_timeout) {
                    return Decision {
                        records: Vec::new(),
                        reply: ControllerReply::RegisterBroker(Err(
                            LifecycleError::DuplicateRegistration {
                                broker: *broker_id,
                                other: b.incarnation_id,
                            },
                        )),
                    };
                }
            }
            liveness.beat(*broker_id, now);
            // A re-registration replaces a live-looking old one: it leaves
            // the partitions it led first. After an unclean shutdown
            // (KIP-966: the previous epoch is not the registered one) it
            // also leaves every ELR.
            let mut records = Vec::new();
            if let Some(b) = image.registrations.get(broker_id) {
                let mut after = image.clone();
                if b.is_alive() {
                    records = election::on_broker_gone(image, &rules.election, *broker_id);
                    after = after.apply(after.offset, &records);
                }
                if *previous_broker_epoch != Some(b.epoch) {
                    log::info!(
                        "broker {broker_id} registers after an unclean shutdown (previous broker epoch {previous_broker_epoch:?}, registered {}): it leaves every ELR",
                        b.epoch
                    );
                    records.extend(election::on_unclean_shutdown(
                        &after,
                        &rules.election,
                        *broker_id,
                    ));
                }
            }
            records.insert(
                0,
                MetadataRecord::RegisterBroker {
                    broker_id: *broker_id,
                    incarnation_id: *incarnation_id,
                    endpoints: endpoints.clone(),
                    rack: rack.clone(),
                    fenced: true,
                },
            );
            Decision {
                records,
                reply: ControllerReply::RegisterBroker(Ok(0)),
            }
        }
        ControllerRequest::BrokerHeartbeat {
            broker_id,
            broker_epoch,
            metadata_offset,
            want_fence,
            want_shutdown,
        } => {
            if let Err(e) = check_epoch(image, *broker_id, *broker_epoch) {
                return Decision {
                    records: Vec::new(),
                    reply: ControllerReply::BrokerHeartbeat(Err(e)),
                };
            }
            liveness.beat(*broker_id, now);
            let Some(b) = image.registrations.get(broker_id) else {
                return Decision {
                    records: Vec::new(),
                    reply: ControllerReply::BrokerHeartbeat(Err(LifecycleError::NotRegistered {
                        broker: *broker_id,
                    })),
                };
            };
            let caught_up = *metadata_offset >= b.epoch as u64;
            let epoch = b.epoch;
            let mut records = Vec::new();
            let mut fenced = b.fenced;
            if *want_shutdown {
                if !b.in_controlled_shutdown {
                    records.push(MetadataRecord::BrokerShutdown {
                        broker_id: *broker_id,
                        epoch,
                    });
                    records.extend(election::on_broker_gone(image, &rules.election, *broker_id));
                }
            } else if *want_fence {
                if !b.fenced {
                    records.push(MetadataRecord::FenceBroker {
                        broker_id: *broker_id,
                        epoch,
                    });
                    records.extend(election::on_broker_gone(image, &rules.election, *broker_id));
                    fenced = true;
                }
            } else if b.fenced && caught_up {
                records.push(MetadataRecord::UnfenceBroker {
                    broker_id: *broker_id,
                    epoch,
                });
                let mut after = image.clone();
                if let Some(r) = after.registrations.get_mut(broker_id) {
                    r.fenced = false;
                }
                records.extend(election::on_broker_back(
                    &after,
                    &rules.election,
                    *broker_id,
                ));
                fenced = false;
            }
            Decision {
                records,
                reply: ControllerReply::BrokerHeartbeat(Ok(HeartbeatReply {
                    is_caught_up: caught_up,
                    is_fenced: fenced,
                    should_shutdown: *want_shutdown,
                })),
            }
        }
    }
}

/// The ConfigRecords (GROUP resource) that turn `group`'s overrides in
/// `image` into `configs`: a value for each key set or changed, a removal
/// (null value) for each key no longer set.
fn group_config_records(
    image: &MetadataImage,
    group: &str,
    configs: &BTreeMap<String, String>,
) -> Vec<MetadataRecord> {
    let empty = BTreeMap::new();
    let current = image.group_configs.get(group).unwrap_or(&empty);
    let res = || ConfigResource::Group(group.to_string());
    let mut records: Vec<MetadataRecord> = configs
        .iter()
        .filter(|(k, v)| current.get(*k) != Some(*v))
        .map(|(k, v)| MetadataRecord::Config {
            resource: res(),
            name: k.clone(),
            value: Some(v.clone()),
        })
        .collect();
    records.extend(
        current
            .keys()
            .filter(|k| !configs.contains_key(*k))
            .map(|k| MetadataRecord::Config {
                resource: res(),
                name: k.clone(),
                value: None,
            }),
    );
    records
}

pub mod acl;
pub mod features;
mod liveness;
pub mod quota;
pub mod scram;
mod topics;
pub use liveness::{expire_sessions, Liveness};

#[cfg(test)]
mod tests;
