//! Cluster metadata: topics, partitions, node ids and leader epochs.
//!
//! One node exists today. The seams for replication are kept honest: every
//! partition has a leader (this node's `node.id`), a leader epoch (0 until
//! leadership can change) and a replica set; shard 0 plays the controller role
//! and publishes immutable [`metadata::MetadataImage`] snapshots to every shard,
//! the way a KRaft controller publishes metadata records to brokers.

pub mod controller;
pub mod error;
pub mod format;
pub mod import;
pub mod metadata;
pub mod topic_config;
pub mod topic_name;
