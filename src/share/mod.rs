//! Share groups (KIP-932, "queues for Kafka"): the parts that are pure
//! state. [`partition`] is one share-partition's in-flight window
//! (acquisition locks, delivery counts, acknowledgements, the share-partition
//! start offset); [`records`] is the share coordinator's
//! `__share_group_state` records in Kafka's encoding; [`session`] the share
//! sessions of ShareFetch and ShareAcknowledge; [`config`] the settings they
//! run with; [`state`] the share coordinator's state and decisions
//! (`crate::share_coordinator` applies them on the shard). Served:
//! ShareFetch and ShareAcknowledge (`handlers::share_fetch`, the
//! share-partitions on the leader's shard in `shard::owner::share`) and the
//! share-state APIs (`handlers::share_state`)
//! (docs/decisions/share-groups.md).

pub mod config;
pub mod partition;
pub mod records;
pub mod session;
pub mod state;
