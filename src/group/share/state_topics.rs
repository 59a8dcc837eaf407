//! The share-partitions a share group has state for (KIP-932, record 15
//! `ShareGroupStatePartitionMetadata` of `__consumer_offsets`, its
//! "initialized" topics): what DescribeShareGroupOffsets without topics
//! describes, and what DeleteGroups and DeleteShareGroupOffsets delete on
//! the share coordinator.
//!
//! Kafka 4.4's group coordinator adds a partition when it initializes its
//! state (when the partition first enters the group's target assignment);
//! Fjord's share-partition leader initializes a missing state on first
//! use, so the group coordinator adds the partitions of the target as it
//! computes it (a partition added before its leader initialized the state
//! is described at start offset -1, as Kafka describes a state initialized
//! at -1). AlterShareGroupOffsets adds the partitions it initializes,
//! DeleteShareGroupOffsets removes the topics it deletes.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::records::StatePartitionMetadata;

/// Topic id → (name, partitions) of a share group's share-partitions with
/// state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateTopics(BTreeMap<Uuid, (String, BTreeSet<i32>)>);

impl StateTopics {
    /// The set as record 15 carries it (its "initialized" topics).
    pub fn from_record(v: &StatePartitionMetadata) -> StateTopics {
        StateTopics(
            v.initialized
                .iter()
                .map(|(id, name, parts)| (*id, (name.clone(), parts.iter().copied().collect())))
                .collect(),
        )
    }

    /// Record 15's value for this set (nothing initializing or deleting).
    pub fn to_record(&self) -> StatePartitionMetadata {
        StatePartitionMetadata {
            initializing: Vec::new(),
            initialized: self.list(),
            deleting: Vec::new(),
        }
    }

    /// Adds partitions `0..partitions` of topic `id` (`name`); whether
    /// anything was new.
    pub fn add_all(&mut self, id: Uuid, name: &str, partitions: i32) -> bool {
        self.add(id, name, 0..partitions.max(0))
    }

    /// Adds `partitions` of topic `id` (`name`); whether anything was new.
    pub fn add(&mut self, id: Uuid, name: &str, partitions: impl IntoIterator<Item = i32>) -> bool {
        let entry = self
            .0
            .entry(id)
            .or_insert_with(|| (name.to_string(), BTreeSet::new()));
        let before = entry.1.len();
        entry.1.extend(partitions);
        entry.1.len() != before
    }

    /// Removes topic `id`; whether it was there.
    pub fn remove(&mut self, id: &Uuid) -> bool {
        self.0.remove(id).is_some()
    }

    /// (topic id, name, partitions), by topic id.
    pub fn list(&self) -> Vec<(Uuid, String, Vec<i32>)> {
        self.0
            .iter()
            .map(|(id, (name, parts))| (*id, name.clone(), parts.iter().copied().collect()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_and_round_trips_through_record_15() {
        let mut s = StateTopics::default();
        let id = Uuid::from_u128(7);
        assert!(s.add_all(id, "t", 2));
        assert!(!s.add_all(id, "t", 2));
        assert!(s.add(id, "t", [3]));
        assert_eq!(s.list(), vec![(id, "t".to_string(), vec![0, 1, 3])]);
        assert_eq!(StateTopics::from_record(&s.to_record()), s);
        assert!(s.remove(&id));
        assert!(s.list().is_empty());
    }
}
