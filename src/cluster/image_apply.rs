//! Applying metadata records: the committed log, entry by entry, gives the
//! next [`MetadataImage`]. Pure and deterministic, so every node that
//! applies the same entries holds the same image. A record that does not fit
//! the image (a partition of an unknown topic, a stale broker epoch) is
//! skipped with a warning: the active controller only writes records that
//! fit, and skipping keeps replay total.

use std::sync::Arc;

use super::metadata::{BrokerRegistration, MetadataImage, RemovedTopic, TopicMeta};
use super::records::{ConfigResource, MetadataRecord};

impl MetadataImage {
    /// The image after the records of the entry at log `offset`.
    pub fn apply(&self, offset: u64, records: &[MetadataRecord]) -> MetadataImage {
        let mut next = self.clone();
        for r in records {
            next.apply_one(offset, r);
        }
        next.offset = offset;
        next.version += 1;
        next
    }

    fn apply_one(&mut self, offset: u64, r: &MetadataRecord) {
        match r {
            MetadataRecord::RegisterBroker {
                broker_id,
                incarnation_id,
                endpoints,
                rack,
                fenced,
            } => {
                self.registrations.insert(
                    *broker_id,
                    BrokerRegistration {
                        node_id: *broker_id,
                        incarnation_id: *incarnation_id,
                        epoch: offset as i64,
                        endpoints: endpoints.clone(),
                        rack: rack.clone(),
                        fenced: *fenced,
                        in_controlled_shutdown: false,
                    },
                );
            }
            MetadataRecord::FenceBroker { broker_id, epoch } => {
                self.with_broker(*broker_id, *epoch, |b| b.fenced = true)
            }
            MetadataRecord::UnfenceBroker { broker_id, epoch } => {
                self.with_broker(*broker_id, *epoch, |b| {
                    b.fenced = false;
                    b.in_controlled_shutdown = false;
                })
            }
            MetadataRecord::BrokerShutdown { broker_id, epoch } => {
                self.with_broker(*broker_id, *epoch, |b| b.in_controlled_shutdown = true)
            }
            MetadataRecord::UnregisterBroker { broker_id, epoch } => {
                if self
                    .registrations
                    .get(broker_id)
                    .is_some_and(|b| b.epoch == *epoch)
                {
                    self.registrations.remove(broker_id);
                }
            }
            MetadataRecord::Topic { name, topic_id } => {
                if self.topics.contains_key(name.as_str()) || self.topic_ids.contains_key(topic_id) {
                    log::warn!("metadata offset {offset}: topic {name} ({topic_id}) exists; record skipped");
                    return;
                }
                let name: Arc<str> = Arc::from(name.as_str());
                // An id deleted before and adopted again (`fjord
                // import-logs` keeps ids) is a topic again.
                self.removed_topics.remove(topic_id);
                self.topic_ids.insert(*topic_id, name.clone());
                self.topics.insert(
                    name.clone(),
                    Arc::new(TopicMeta {
                        name,
                        id: *topic_id,
                        partitions: 0,
                        configs: Default::default(),
                        assignments: Vec::new(),
                    }),
                );
            }
            MetadataRecord::Partition {
                topic_id,
                partition_id,
                registration,
            } => self.edit_topic(offset, topic_id, |t| {
                let i = usize::try_from(*partition_id).unwrap_or(usize::MAX);
                if i < t.assignments.len() {
                    t.assignments[i] = registration.clone();
                } else if i == t.assignments.len() {
                    t.assignments.push(registration.clone());
                } else {
                    log::warn!(
                        "metadata offset {offset}: partition {partition_id} of {} leaves a gap; record skipped",
                        t.name
                    );
                }
                t.partitions = t.assignments.len() as i32;
            }),
            MetadataRecord::PartitionChange {
                topic_id,
                partition_id,
                isr,
                elr,
                last_known_elr,
                leader,
                replicas,
                adding_replicas,
                removing_replicas,
            } => self.edit_topic(offset, topic_id, |t| {
                let Some(p) = usize::try_from(*partition_id)
                    .ok()
                    .and_then(|i| t.assignments.get_mut(i))
                else {
                    log::warn!(
                        "metadata offset {offset}: no partition {partition_id} of {}; change skipped",
                        t.name
                    );
                    return;
                };
                if let Some(isr) = isr {
                    p.isr = isr.clone();
                }
                if let Some(elr) = elr {
                    p.elr = elr.clone();
                }
                if let Some(lke) = last_known_elr {
                    p.last_known_elr = lke.clone();
                }
                // A replica list that drops a member bumps the leader epoch
                // also without a leader change (KRaft's
                // `PartitionChangeBuilder`): the removed replica's fetches
                // are fenced from then on.
                let mut bump = false;
                if let Some(replicas) = replicas {
                    bump = p.replicas.iter().any(|r| !replicas.contains(r));
                    p.replicas = replicas.clone();
                }
                if let Some(adding) = adding_replicas {
                    p.adding_replicas = adding.clone();
                }
                if let Some(removing) = removing_replicas {
                    p.removing_replicas = removing.clone();
                }
                if let Some(l) = leader {
                    if *l != p.leader {
                        p.leader = *l;
                        bump = true;
                    }
                }
                if bump {
                    p.leader_epoch += 1;
                }
                p.partition_epoch += 1;
            }),
            MetadataRecord::RemoveTopic { topic_id } => {
                if let Some(name) = self.topic_ids.remove(topic_id) {
                    self.topics.remove(&name);
                    // The cause a shard needs to delete the topic's
                    // directories (`shard::removal`).
                    self.removed_topics.insert(
                        *topic_id,
                        RemovedTopic {
                            name: name.to_string(),
                            offset,
                        },
                    );
                }
            }
            MetadataRecord::Config {
                resource,
                name,
                value,
            } => match resource {
                ConfigResource::Topic(topic) => {
                    let Some(id) = self.topic(topic).map(|t| t.id) else {
                        log::warn!("metadata offset {offset}: config of unknown topic {topic}; skipped");
                        return;
                    };
                    self.edit_topic(offset, &id, |t| match value {
                        Some(v) => {
                            t.configs.insert(name.clone(), v.clone());
                        }
                        None => {
                            t.configs.remove(name);
                        }
                    })
                }
                ConfigResource::Broker(id) => {
                    let configs = self.broker_configs.entry(*id).or_default();
                    match value {
                        Some(v) => {
                            configs.insert(name.clone(), v.clone());
                        }
                        None => {
                            configs.remove(name);
                        }
                    }
                }
                ConfigResource::Group(group) => {
                    let configs = self.group_configs.entry(group.clone()).or_default();
                    match value {
                        Some(v) => {
                            configs.insert(name.clone(), v.clone());
                        }
                        None => {
                            configs.remove(name);
                        }
                    }
                    if configs.is_empty() {
                        self.group_configs.remove(group);
                    }
                }
            },
            MetadataRecord::UserScramCredential {
                name,
                mechanism,
                credential,
            } => {
                self.scram_credentials
                    .entry(name.clone())
                    .or_default()
                    .insert(*mechanism, credential.clone());
            }
            MetadataRecord::AccessControlEntry { id, acl } => {
                self.acls.insert(*id, acl.clone());
            }
            MetadataRecord::RemoveAccessControlEntry { id } => {
                self.acls.remove(id);
            }
            MetadataRecord::ClientQuota {
                entity,
                key,
                value,
                remove,
            } => {
                // The controller writes only entities of known types.
                if let Some(e) = crate::quota::model::QuotaEntity::from_parts(entity) {
                    if *remove {
                        if let Some(m) = self.client_quotas.get_mut(&e) {
                            m.remove(key);
                            if m.is_empty() {
                                self.client_quotas.remove(&e);
                            }
                        }
                    } else {
                        self.client_quotas
                            .entry(e)
                            .or_default()
                            .insert(key.clone(), *value);
                    }
                }
            }
            MetadataRecord::RemoveUserScramCredential { name, mechanism } => {
                if let Some(m) = self.scram_credentials.get_mut(name) {
                    m.remove(mechanism);
                    if m.is_empty() {
                        self.scram_credentials.remove(name);
                    }
                }
            }
            MetadataRecord::FeatureLevel { name, level } => {
                if *level <= 0 {
                    self.finalized_features.remove(name);
                } else {
                    self.finalized_features.insert(name.clone(), *level);
                }
            }
            MetadataRecord::ProducerIds {
                next_producer_id, ..
            } => {
                self.next_producer_id = self.next_producer_id.max(*next_producer_id);
            }
        }
    }

    fn with_broker(&mut self, id: i32, epoch: i64, f: impl FnOnce(&mut BrokerRegistration)) {
        match self.registrations.get_mut(&id) {
            Some(b) if b.epoch == epoch => f(b),
            _ => log::warn!("broker {id} epoch {epoch}: no such registration; record skipped"),
        }
    }

    fn edit_topic(&mut self, offset: u64, id: &uuid::Uuid, f: impl FnOnce(&mut TopicMeta)) {
        let Some(name) = self.topic_ids.get(id).cloned() else {
            log::warn!("metadata offset {offset}: unknown topic id {id}; record skipped");
            return;
        };
        if let Some(t) = self.topics.get_mut(&name) {
            f(Arc::make_mut(t));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::metadata::{Endpoint, PartitionRegistration, NO_LEADER};
    use uuid::Uuid;

    fn reg(broker: i32) -> MetadataRecord {
        MetadataRecord::RegisterBroker {
            broker_id: broker,
            incarnation_id: Uuid::new_v4(),
            endpoints: vec![Endpoint {
                listener: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 9090 + broker as u16,
            }],
            rack: None,
            fenced: true,
        }
    }

    fn part(id: Uuid, p: i32, replicas: &[i32]) -> MetadataRecord {
        MetadataRecord::Partition {
            topic_id: id,
            partition_id: p,
            registration: PartitionRegistration {
                replicas: replicas.to_vec(),
                isr: replicas.to_vec(),
                elr: vec![],
                last_known_elr: Vec::new(),
                leader: replicas[0],
                leader_epoch: 0,
                partition_epoch: 0,
                adding_replicas: Vec::new(),
                removing_replicas: Vec::new(),
            },
        }
    }

    #[test]
    fn brokers_register_fenced_and_epochs_guard_changes() {
        let img = MetadataImage::empty("c".into());
        let img = img.apply(3, &[reg(1)]);
        assert_eq!(img.registrations[&1].epoch, 3);
        assert!(img.brokers(None).is_empty(), "a new registration is fenced");
        let img = img.apply(
            4,
            &[MetadataRecord::UnfenceBroker {
                broker_id: 1,
                epoch: 3,
            }],
        );
        assert_eq!(img.brokers(None).len(), 1);
        // A stale epoch changes nothing.
        let img = img.apply(
            5,
            &[MetadataRecord::FenceBroker {
                broker_id: 1,
                epoch: 2,
            }],
        );
        assert!(img.is_alive(1));
        let img = img.apply(
            6,
            &[MetadataRecord::FenceBroker {
                broker_id: 1,
                epoch: 3,
            }],
        );
        assert!(!img.is_alive(1));
        // Re-registration replaces the old one with a new epoch.
        let img = img.apply(9, &[reg(1)]);
        assert_eq!(img.registrations[&1].epoch, 9);
        assert_eq!((img.offset, img.version), (9, 5));
    }

    #[test]
    fn topics_partitions_changes_configs_and_removal() {
        let id = Uuid::new_v4();
        let img = MetadataImage::empty("c".into()).apply(
            1,
            &[
                MetadataRecord::Topic {
                    name: "t".into(),
                    topic_id: id,
                },
                part(id, 0, &[1, 2, 3]),
                part(id, 1, &[2, 3, 1]),
                part(id, 5, &[2, 3, 1]),
                MetadataRecord::Config {
                    resource: ConfigResource::Topic("t".into()),
                    name: "cleanup.policy".into(),
                    value: Some("compact".into()),
                },
            ],
        );
        let t = img.topic("t").unwrap();
        assert_eq!(t.partitions, 2, "a partition past the end is skipped");
        assert_eq!(t.configs["cleanup.policy"], "compact");
        // The same name again is skipped.
        let img = img.apply(
            2,
            &[MetadataRecord::Topic {
                name: "t".into(),
                topic_id: Uuid::new_v4(),
            }],
        );
        assert_eq!(img.topic("t").unwrap().id, id);
        let change = |isr: Option<Vec<i32>>, leader: Option<i32>| MetadataRecord::PartitionChange {
            topic_id: id,
            partition_id: 0,
            isr,
            elr: None,
            last_known_elr: None,
            leader,
            replicas: None,
            adding_replicas: None,
            removing_replicas: None,
        };
        let img = img.apply(3, &[change(Some(vec![1, 3]), None)]);
        let p = img.partition("t", 0).unwrap().clone();
        assert_eq!(
            (p.isr.clone(), p.leader, p.leader_epoch, p.partition_epoch),
            (vec![1, 3], 1, 0, 1)
        );
        let img = img.apply(4, &[change(Some(vec![3]), Some(3))]);
        let p = img.partition("t", 0).unwrap().clone();
        assert_eq!((p.leader, p.leader_epoch, p.partition_epoch), (3, 1, 2));
        let img = img.apply(5, &[change(None, Some(NO_LEADER))]);
        assert_eq!(img.leader("t", 0), Some((NO_LEADER, 2)));
        let img = img.apply(6, &[MetadataRecord::RemoveTopic { topic_id: id }]);
        assert!(img.topic("t").is_none() && img.topic_by_id(&id).is_none());
        assert_eq!(
            img.removed_topics.get(&id),
            Some(&RemovedTopic {
                name: "t".into(),
                offset: 6
            }),
            "the deletion keeps its cause"
        );
        // Removing an unknown id records nothing.
        let other = Uuid::new_v4();
        let img = img.apply(7, &[MetadataRecord::RemoveTopic { topic_id: other }]);
        assert!(!img.removed_topics.contains_key(&other));
    }

    #[test]
    fn producer_id_blocks_only_move_forward() {
        let rec = |n| MetadataRecord::ProducerIds {
            broker_id: 1,
            broker_epoch: 1,
            next_producer_id: n,
        };
        let img = MetadataImage::empty("c".into()).apply(1, &[rec(1000)]);
        let img = img.apply(2, &[rec(500)]);
        assert_eq!(img.next_producer_id, 1000);
    }
}
