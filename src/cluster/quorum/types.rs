//! The metadata quorum's openraft types: a log entry carries a batch of
//! metadata records; node ids are Kafka's `node.id`s; a node's address is
//! its controller listener.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::runtime::GlommioRuntime;
use crate::cluster::records::MetadataRecord;

/// One Raft log entry's application data: metadata records applied together.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MetadataEntry {
    /// The records, in order.
    pub records: Vec<MetadataRecord>,
}

impl fmt::Display for MetadataEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} metadata record(s)", self.records.len())
    }
}

openraft::declare_raft_types!(
    /// The metadata quorum's type configuration.
    pub TypeConfig:
        D = MetadataEntry,
        R = (),
        NodeId = u64,
        Node = openraft::BasicNode,
        AsyncRuntime = GlommioRuntime,
);

/// The openraft handle of the metadata quorum.
pub type MetadataRaft = openraft::Raft<TypeConfig, super::state_machine::StateMachine>;
/// A log entry.
pub type Entry = openraft::type_config::alias::EntryOf<TypeConfig>;
/// A log id (leader id and index).
pub type LogId = openraft::type_config::alias::LogIdOf<TypeConfig>;
/// A vote.
pub type Vote = openraft::type_config::alias::VoteOf<TypeConfig>;
/// Membership as stored with the log id that carried it.
pub type StoredMembership = openraft::type_config::alias::StoredMembershipOf<TypeConfig>;
/// A snapshot (its metadata and the image as JSON).
pub type MetadataSnapshot = openraft::type_config::alias::SnapshotOf<TypeConfig, Vec<u8>>;
/// A snapshot's metadata.
pub type SnapshotMeta = openraft::type_config::alias::SnapshotMetaOf<TypeConfig>;

/// openraft's node id of Kafka `node.id` `id` (never negative: checked by
/// the configuration).
pub fn raft_id(id: i32) -> u64 {
    u64::try_from(id).unwrap_or(0)
}

/// Kafka's `node.id` of openraft node `id`.
pub fn kafka_id(id: u64) -> i32 {
    i32::try_from(id).unwrap_or(-1)
}
