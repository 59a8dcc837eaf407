//! Immutable snapshots of the cluster metadata, shared by every shard.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use uuid::Uuid;

/// One topic: its id (KIP-516 topic ids), partition count and topic-level
/// configs (Kafka names, e.g. `cleanup.policy`).
#[derive(Debug, Clone, PartialEq)]
pub struct TopicMeta {
    /// Topic name.
    pub name: Arc<str>,
    /// Topic id, stable for the topic's life.
    pub id: Uuid,
    /// Number of partitions.
    pub partitions: i32,
    /// Topic-level config overrides (Kafka property names).
    pub configs: BTreeMap<String, String>,
}

/// A broker as Metadata and DescribeCluster show it.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokerMeta {
    /// `node.id`.
    pub node_id: i32,
    /// Advertised host.
    pub host: String,
    /// Advertised port.
    pub port: i32,
    /// Rack (`broker.rack`), none yet.
    pub rack: Option<String>,
}

/// A consistent view of the cluster at one metadata version. Shards hold an
/// `Arc<MetadataImage>` and swap it when the controller publishes a new one;
/// nothing in an image is ever mutated.
#[derive(Debug, Clone)]
pub struct MetadataImage {
    /// Monotonic version of this image.
    pub version: u64,
    /// `cluster.id` from `meta.properties`.
    pub cluster_id: String,
    /// The controller's node id (this node).
    pub controller_id: i32,
    /// Live brokers.
    pub brokers: Vec<BrokerMeta>,
    /// Topics by name.
    pub topics: BTreeMap<Arc<str>, Arc<TopicMeta>>,
    /// Topic names by id.
    pub topic_ids: HashMap<Uuid, Arc<str>>,
}

impl MetadataImage {
    /// An image with no topics.
    pub fn empty(cluster_id: String, node_id: i32, broker: BrokerMeta) -> MetadataImage {
        MetadataImage {
            version: 0,
            cluster_id,
            controller_id: node_id,
            brokers: vec![broker],
            topics: BTreeMap::new(),
            topic_ids: HashMap::new(),
        }
    }

    /// The topic named `name`.
    pub fn topic(&self, name: &str) -> Option<&Arc<TopicMeta>> {
        self.topics.get(name)
    }

    /// The topic with id `id`.
    pub fn topic_by_id(&self, id: &Uuid) -> Option<&Arc<TopicMeta>> {
        self.topic_ids.get(id).and_then(|n| self.topics.get(n))
    }

    /// The leader of every partition: this node, until replication exists.
    pub fn leader(&self) -> i32 {
        self.controller_id
    }

    /// Leader epoch of a partition: 0 until leadership can change.
    pub fn leader_epoch(&self, _topic: &str, _partition: i32) -> i32 {
        0
    }

    /// A copy with `topic` added or replaced, and the version bumped.
    pub fn with_topic(&self, topic: TopicMeta) -> MetadataImage {
        let mut next = self.clone();
        next.version += 1;
        next.topic_ids.insert(topic.id, topic.name.clone());
        next.topics.insert(topic.name.clone(), Arc::new(topic));
        next
    }

    /// A copy without `name`, and the version bumped.
    pub fn without_topic(&self, name: &str) -> MetadataImage {
        let mut next = self.clone();
        next.version += 1;
        if let Some(t) = next.topics.remove(name) {
            next.topic_ids.remove(&t.id);
        }
        next
    }
}

/// Which shard owns a partition: a stable function of the topic name and the
/// partition index, so every shard computes the same owner without shared
/// state (the "shard table" is this function and the shard count).
pub fn owner_shard(topic: &str, partition: i32, shards: usize) -> usize {
    if shards <= 1 {
        return 0;
    }
    let h = crc32c::crc32c(topic.as_bytes()) as u64;
    ((h.wrapping_add(partition as u64 & 0xffff_ffff)) % shards as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_spreads_partitions_of_a_topic() {
        let owners: Vec<usize> = (0..4).map(|p| owner_shard("t", p, 2)).collect();
        assert!(owners.contains(&0) && owners.contains(&1), "{owners:?}");
        assert_eq!(owner_shard("t", 3, 1), 0);
        assert_eq!(owner_shard("t", 3, 2), owner_shard("t", 3, 2));
    }

    #[test]
    fn with_and_without_topic() {
        let b = BrokerMeta {
            node_id: 1,
            host: "h".into(),
            port: 1,
            rack: None,
        };
        let img = MetadataImage::empty("c".into(), 1, b);
        let t = TopicMeta {
            name: "a".into(),
            id: Uuid::new_v4(),
            partitions: 2,
            configs: BTreeMap::new(),
        };
        let id = t.id;
        let img2 = img.with_topic(t);
        assert_eq!(img2.topic_by_id(&id).map(|t| t.partitions), Some(2));
        let img3 = img2.without_topic("a");
        assert!(img3.topic("a").is_none() && img3.topic_by_id(&id).is_none());
        assert!(img3.version > img2.version && img2.version > img.version);
    }
}
