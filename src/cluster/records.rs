//! The records of the metadata log, shaped after KRaft's (KIP-631):
//! `RegisterBrokerRecord`, `FenceBrokerRecord`/`UnfenceBrokerRecord`,
//! `TopicRecord`, `PartitionRecord`, `PartitionChangeRecord`,
//! `RemoveTopicRecord`, `ConfigRecord`, `ProducerIdsRecord`,
//! `FeatureLevelRecord`, … One Raft log
//! entry carries a batch of records that is applied atomically (as a KRaft
//! record batch is). Applying them is [`super::image_apply`].
//!
//! They are stored and sent as JSON (serde): the metadata log is small and
//! rarely written, and a readable log helps operators.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::metadata::{Endpoint, PartitionRegistration};

/// What a config record applies to (Kafka's `ConfigResource`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConfigResource {
    /// A topic, by name.
    Topic(String),
    /// A broker by id, or the cluster-wide broker default (`None`).
    Broker(Option<i32>),
    /// A group by id (Kafka's GROUP resource type 32, KIP-848's group
    /// configs).
    Group(String),
}

/// One metadata record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MetadataRecord {
    /// A broker (re-)registered; its broker epoch is the offset of the
    /// entry holding this record. Replaces an older registration.
    RegisterBroker {
        /// `node.id`.
        broker_id: i32,
        /// The process's incarnation id.
        incarnation_id: Uuid,
        /// Client endpoints, the inter-broker listener first.
        endpoints: Vec<Endpoint>,
        /// `broker.rack`.
        rack: Option<String>,
        /// Whether it starts fenced (a new registration always does).
        fenced: bool,
    },
    /// The broker stopped heartbeating (or asked to be fenced).
    FenceBroker {
        /// Broker id.
        broker_id: i32,
        /// Its epoch at the time (a stale record is ignored).
        epoch: i64,
    },
    /// The broker caught up with the metadata log and heartbeats.
    UnfenceBroker {
        /// Broker id.
        broker_id: i32,
        /// Its epoch at the time.
        epoch: i64,
    },
    /// The broker is in controlled shutdown: it leads nothing from now on.
    BrokerShutdown {
        /// Broker id.
        broker_id: i32,
        /// Its epoch at the time.
        epoch: i64,
    },
    /// The broker was removed (`UnregisterBroker`).
    UnregisterBroker {
        /// Broker id.
        broker_id: i32,
        /// Its epoch at the time.
        epoch: i64,
    },
    /// A topic was created (its partitions follow as `Partition` records).
    Topic {
        /// Topic name.
        name: String,
        /// Topic id.
        topic_id: Uuid,
    },
    /// A partition was created (CreateTopics, CreatePartitions).
    Partition {
        /// Its topic's id.
        topic_id: Uuid,
        /// Partition index.
        partition_id: i32,
        /// Replicas, ISR, leader and epochs.
        registration: PartitionRegistration,
    },
    /// A partition's ISR, leader or replicas changed. A leader change bumps
    /// the leader epoch; every change bumps the partition epoch.
    PartitionChange {
        /// Its topic's id.
        topic_id: Uuid,
        /// Partition index.
        partition_id: i32,
        /// The new ISR, when it changes.
        isr: Option<Vec<i32>>,
        /// The new ELR (KIP-966), when it changes.
        #[serde(default)]
        elr: Option<Vec<i32>>,
        /// The new last known ELR (KIP-966), when it changes.
        #[serde(default)]
        last_known_elr: Option<Vec<i32>>,
        /// The new leader ([`super::metadata::NO_LEADER`] for none), when it
        /// changes.
        leader: Option<i32>,
        /// The new replicas, when they change.
        replicas: Option<Vec<i32>>,
        /// The replicas a reassignment adds, when they change (KRaft's
        /// `PartitionChangeRecord.addingReplicas`; empty: none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        adding_replicas: Option<Vec<i32>>,
        /// The replicas a reassignment removes, when they change (KRaft's
        /// `removingReplicas`; empty: none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        removing_replicas: Option<Vec<i32>>,
    },
    /// A topic was deleted.
    RemoveTopic {
        /// Its id.
        topic_id: Uuid,
    },
    /// A config was set (`value`) or removed (`None`).
    Config {
        /// What it applies to.
        resource: ConfigResource,
        /// Kafka's key.
        name: String,
        /// The value; None removes it.
        value: Option<String>,
    },
    /// A user's SCRAM credential for one mechanism was set (KRaft's
    /// UserScramCredentialRecord, KIP-554): salt, stored key, server key
    /// and iterations, never the password.
    UserScramCredential {
        /// The user name.
        name: String,
        /// The mechanism.
        mechanism: crate::security::scram::ScramMechanism,
        /// The credential.
        credential: crate::security::scram::ScramCredential,
    },
    /// A user's SCRAM credential for one mechanism was deleted (KRaft's
    /// RemoveUserScramCredentialRecord).
    RemoveUserScramCredential {
        /// The user name.
        name: String,
        /// The mechanism.
        mechanism: crate::security::scram::ScramMechanism,
    },
    /// An ACL was created (KRaft's AccessControlEntryRecord).
    AccessControlEntry {
        /// Its id.
        id: Uuid,
        /// The ACL.
        acl: crate::acl::model::AclBinding,
    },
    /// An ACL was deleted (KRaft's RemoveAccessControlEntryRecord).
    RemoveAccessControlEntry {
        /// Its id.
        id: Uuid,
    },
    /// A client quota was set or removed (KRaft's ClientQuotaRecord): the
    /// entity as (entity type, name) pairs, a name of None being the
    /// type's default.
    ClientQuota {
        /// The entity.
        entity: Vec<(String, Option<String>)>,
        /// The quota key (`producer_byte_rate`, …).
        key: String,
        /// The value (ignored when `remove`).
        value: crate::quota::model::QuotaValue,
        /// Whether the key is removed from the entity.
        remove: bool,
    },
    /// A feature's finalized level was set (KRaft's FeatureLevelRecord,
    /// KIP-584/KIP-778): level 0 removes the feature from the finalized
    /// set ([`super::features`]).
    FeatureLevel {
        /// The feature's name (`metadata.version`, `transaction.version`, …).
        name: String,
        /// The finalized level.
        level: i16,
    },
    /// A block of producer ids was handed to a broker: ids below
    /// `next_producer_id` are taken.
    ProducerIds {
        /// The broker that got the block.
        broker_id: i32,
        /// Its epoch.
        broker_epoch: i64,
        /// The first id of the next block.
        next_producer_id: i64,
    },
}

/// The records of one log entry, applied together.
pub type MetadataBatch = Vec<MetadataRecord>;
