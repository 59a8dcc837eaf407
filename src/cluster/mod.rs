//! Cluster metadata: brokers, topics, partitions with their replicas, ISR,
//! leaders and epochs, and the metadata quorum that replicates them.
//!
//! Kafka's split is the model: the metadata lives in a Raft log
//! ([`quorum`], on openraft) of KRaft-shaped [`records`]; applying it
//! ([`image_apply`]) gives immutable [`metadata::MetadataImage`]s that shard 0
//! publishes to every shard. The active controller ([`control`]) validates
//! admin requests and broker heartbeats and decides the records (replica
//! [`placement`], leader [`election`]s).

pub mod alter_partition;
pub mod bootstrap_scram;
pub mod control;
pub mod controller;
pub mod election;
pub mod elr;
pub mod error;
pub mod features;
pub mod format;
pub mod image_apply;
pub mod import;
pub mod leadership;
pub mod metadata;
pub mod placement;
pub mod producer_ids;
pub mod quorum;
pub mod reassignment;
pub mod records;
pub mod topic_config;
pub mod topic_name;
