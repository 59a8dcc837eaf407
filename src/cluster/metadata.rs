//! Immutable snapshots of the cluster metadata, shared by every shard.
//!
//! A [`MetadataImage`] is what applying the metadata log up to one offset
//! gives (see [`super::records`] and [`super::image_apply`]): the registered
//! brokers, the topics with every partition's replicas, ISR, leader and
//! epochs (Kafka's `PartitionRegistration`), the next producer id block.
//! Shard 0 of every node applies the committed log and publishes each new
//! image to the node's shards; nothing in an image is ever mutated.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::security::scram::{ScramCredential, ScramMechanism};

/// "No broker": the leader of a partition without one, as Kafka's `-1`.
pub const NO_LEADER: i32 = -1;

/// One partition as the controller registered it (Kafka's
/// `PartitionRegistration`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionRegistration {
    /// Every replica's broker id, the preferred leader first.
    pub replicas: Vec<i32>,
    /// The in-sync replicas.
    pub isr: Vec<i32>,
    /// Eligible leader replicas (KIP-966): replicas that left the ISR while
    /// it was below `min.insync.replicas`, still safe to lead.
    #[serde(default)]
    pub elr: Vec<i32>,
    /// Last known ELR (KIP-966, as Kafka 4 keeps it): the leader of the
    /// moment the ISR became empty, while the partition has no leader; it
    /// leads again when it is alive and the ISR and the ELR are empty.
    #[serde(default)]
    pub last_known_elr: Vec<i32>,
    /// The leader's broker id, or [`NO_LEADER`].
    pub leader: i32,
    /// Bumped on every leader change (stamped in the batches it appends).
    pub leader_epoch: i32,
    /// Bumped on every change of this registration (the compare-and-set
    /// token of AlterPartition).
    pub partition_epoch: i32,
    /// Replicas an ongoing reassignment adds (KIP-455; KRaft's
    /// `PartitionRecord.addingReplicas`): also in `replicas`. Empty when no
    /// reassignment is in progress (and in logs written before it existed).
    #[serde(default)]
    pub adding_replicas: Vec<i32>,
    /// Replicas an ongoing reassignment removes once every target replica
    /// is in the ISR (KRaft's `removingReplicas`): also in `replicas`.
    #[serde(default)]
    pub removing_replicas: Vec<i32>,
}

impl PartitionRegistration {
    /// Whether `broker` leads this partition.
    pub fn is_leader(&self, broker: i32) -> bool {
        self.leader == broker && broker != NO_LEADER
    }

    /// Whether a reassignment (KIP-455) is in progress: some replica is
    /// being added or removed.
    pub fn is_reassigning(&self) -> bool {
        !self.adding_replicas.is_empty() || !self.removing_replicas.is_empty()
    }
}

/// One topic: its id (KIP-516 topic ids), its partitions and topic-level
/// configs (Kafka names, e.g. `cleanup.policy`).
#[derive(Debug, Clone, PartialEq)]
pub struct TopicMeta {
    /// Topic name.
    pub name: Arc<str>,
    /// Topic id, stable for the topic's life.
    pub id: Uuid,
    /// Number of partitions (the length of [`TopicMeta::assignments`]).
    pub partitions: i32,
    /// Topic-level config overrides (Kafka property names).
    pub configs: BTreeMap<String, String>,
    /// Each partition's registration, by partition index.
    pub assignments: Vec<PartitionRegistration>,
}

impl TopicMeta {
    /// The registration of partition `index`.
    pub fn partition(&self, index: i32) -> Option<&PartitionRegistration> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.assignments.get(i))
    }
}

/// One endpoint a broker registered: a listener and where clients reach it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// Listener name (`PLAINTEXT`, …).
    pub listener: String,
    /// Advertised host.
    pub host: String,
    /// Advertised port.
    pub port: u16,
}

/// A registered broker (Kafka's `BrokerRegistration`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerRegistration {
    /// `node.id`.
    pub node_id: i32,
    /// A random id per process start: a second process with the same id is
    /// told apart from a restart (DUPLICATE_BROKER_REGISTRATION).
    pub incarnation_id: Uuid,
    /// The broker epoch: the metadata offset of this registration.
    pub epoch: i64,
    /// The client endpoints, the inter-broker listener first.
    pub endpoints: Vec<Endpoint>,
    /// `broker.rack`.
    pub rack: Option<String>,
    /// Fenced brokers lead no partition and are not listed to clients: a
    /// new registration starts fenced, heartbeats unfence it, missed
    /// heartbeats (`broker.session.timeout.ms`) fence it again.
    pub fenced: bool,
    /// The broker asked to shut down (controlled shutdown): it leads no
    /// partition and gets no new replicas.
    pub in_controlled_shutdown: bool,
}

impl BrokerRegistration {
    /// The endpoint clients use (the first registered).
    pub fn client_endpoint(&self) -> Option<&Endpoint> {
        self.endpoints.first()
    }

    /// The endpoint of listener `listener`, or the first one when the
    /// broker has none of that name (a broker registered before it had
    /// several listeners).
    pub fn endpoint_for(&self, listener: &str) -> Option<&Endpoint> {
        self.endpoints
            .iter()
            .find(|e| e.listener == listener)
            .or_else(|| self.endpoints.first())
    }

    /// Whether the broker may lead partitions and is shown to clients.
    pub fn is_alive(&self) -> bool {
        !self.fenced && !self.in_controlled_shutdown
    }
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
    /// Rack (`broker.rack`).
    pub rack: Option<String>,
}

/// A consistent view of the cluster at one metadata offset. Shards hold an
/// `Arc<MetadataImage>` and swap it when shard 0 publishes a new one.
#[derive(Debug, Clone)]
pub struct MetadataImage {
    /// Monotonic version of this image on this node (every publication
    /// bumps it, also when only [`MetadataImage::controller_id`] changed).
    pub version: u64,
    /// The metadata log offset (Raft log index) applied into this image;
    /// 0 before any.
    pub offset: u64,
    /// `cluster.id` from `meta.properties`.
    pub cluster_id: String,
    /// The active controller's node id as this node last learned it, -1
    /// when none is known (an election is under way).
    pub controller_id: i32,
    /// Every registered broker by id, fenced ones included.
    pub registrations: BTreeMap<i32, BrokerRegistration>,
    /// Topics by name.
    pub topics: BTreeMap<Arc<str>, Arc<TopicMeta>>,
    /// Topic names by id.
    pub topic_ids: HashMap<Uuid, Arc<str>>,
    /// The first producer id not yet handed out in a block (AllocateProducerIds).
    pub next_producer_id: i64,
    /// Broker-level dynamic configs set through the metadata log, by broker
    /// id (`None`: cluster-wide default), Kafka key → value.
    pub broker_configs: BTreeMap<Option<i32>, BTreeMap<String, String>>,
    /// Group configs (Kafka's GROUP config resource, KIP-848) set through
    /// the metadata log, by group id, key → value
    /// (`consumer.session.timeout.ms`, `consumer.heartbeat.interval.ms`).
    pub group_configs: BTreeMap<String, BTreeMap<String, String>>,
    /// Every topic a `RemoveTopic` record deleted, by topic id, with the
    /// log offset of that record: the only cause for which a shard deletes
    /// the directories of a topic that is gone from the image
    /// ([`crate::shard::removal`]). Kept for the life of the cluster (one
    /// small entry per deleted topic) and in snapshots.
    pub removed_topics: BTreeMap<Uuid, RemovedTopic>,
    /// SCRAM credentials (KIP-554) by user name and mechanism.
    pub scram_credentials: BTreeMap<String, BTreeMap<ScramMechanism, ScramCredential>>,
    /// ACLs by id.
    pub acls: BTreeMap<Uuid, crate::acl::model::AclBinding>,
    /// Client quotas by entity and key.
    pub client_quotas: crate::quota::model::QuotaTable,
    /// Finalized feature levels by name (KIP-584), features at level 0
    /// left out ([`super::features`]). Their epoch is
    /// [`MetadataImage::finalized_features_epoch`].
    pub finalized_features: BTreeMap<String, i16>,
}

impl crate::security::sasl::CredentialSource for MetadataImage {
    fn scram(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        self.scram_credentials.get(user)?.get(&mechanism).cloned()
    }
}

/// A topic deleted through the metadata log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemovedTopic {
    /// The topic's name when it was deleted.
    pub name: String,
    /// The metadata log offset (Raft log index) of the `RemoveTopic`
    /// record that deleted it.
    pub offset: u64,
}

/// How a newly published image relates to the one a shard holds
/// ([`MetadataImage::order_against`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageOrder {
    /// Past the held image: a higher log offset, or the same offset
    /// published later (a new active controller).
    Newer,
    /// The held image itself, or one published before it.
    Same,
    /// Reflects fewer log entries than the held image: never applied
    /// (the metadata a shard acts on only moves forward).
    Older,
}

impl MetadataImage {
    /// An image with no brokers and no topics.
    pub fn empty(cluster_id: String) -> MetadataImage {
        MetadataImage {
            version: 0,
            offset: 0,
            cluster_id,
            controller_id: -1,
            registrations: BTreeMap::new(),
            topics: BTreeMap::new(),
            topic_ids: HashMap::new(),
            next_producer_id: 0,
            broker_configs: BTreeMap::new(),
            group_configs: BTreeMap::new(),
            removed_topics: BTreeMap::new(),
            scram_credentials: BTreeMap::new(),
            acls: BTreeMap::new(),
            client_quotas: BTreeMap::new(),
            finalized_features: BTreeMap::new(),
        }
    }

    /// ApiVersions' `finalized_features_epoch`: the metadata offset this
    /// image reflects, as Kafka 4.4 answers (its image's highest offset, so
    /// it moves with every metadata change, not only a feature's).
    pub fn finalized_features_epoch(&self) -> i64 {
        self.offset as i64
    }

    /// Takes the image a shard holds; gives whether this one is newer
    /// (ordered by the metadata log offset it reflects, then by its
    /// publication version, which only a change of the active controller
    /// bumps without an offset).
    pub fn order_against(&self, held: &MetadataImage) -> ImageOrder {
        use std::cmp::Ordering::{Equal, Greater, Less};
        match (
            self.offset.cmp(&held.offset),
            self.version.cmp(&held.version),
        ) {
            (Greater, _) => ImageOrder::Newer,
            (Less, _) => ImageOrder::Older,
            (Equal, Greater) => ImageOrder::Newer,
            (Equal, Equal | Less) => ImageOrder::Same,
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

    /// The registration of partition `index` of `topic`.
    pub fn partition(&self, topic: &str, index: i32) -> Option<&PartitionRegistration> {
        self.topic(topic).and_then(|t| t.partition(index))
    }

    /// The alive (unfenced, not shutting down) brokers as clients of
    /// `listener` see them (None: the first endpoint of each), by id; a
    /// broker without that listener is left out, as Kafka does.
    pub fn brokers(&self, listener: Option<&str>) -> Vec<BrokerMeta> {
        self.registrations
            .values()
            .filter(|b| b.is_alive())
            .filter_map(|b| self.broker_meta(b.node_id, listener))
            .collect()
    }

    /// Broker `id` as clients of `listener` see it (that listener's
    /// endpoint; None: its first endpoint), alive or not; None when it
    /// never registered or has no such listener.
    pub fn broker_meta(&self, id: i32, listener: Option<&str>) -> Option<BrokerMeta> {
        let b = self.registrations.get(&id)?;
        let e = match listener {
            None => b.client_endpoint()?,
            Some(l) => b.endpoints.iter().find(|e| e.listener == l)?,
        };
        Some(BrokerMeta {
            node_id: b.node_id,
            host: e.host.clone(),
            port: i32::from(e.port),
            rack: b.rack.clone(),
        })
    }

    /// Whether broker `id` is registered and alive.
    pub fn is_alive(&self, id: i32) -> bool {
        self.registrations.get(&id).is_some_and(|b| b.is_alive())
    }

    /// Takes the answering broker's id and whether the active controller
    /// answered its heartbeats lately; gives the controller id for clients
    /// (Metadata, DescribeCluster): the answering broker itself when the
    /// quorum is out of its reach (the image cannot show who is gone then,
    /// and a client would wait on a dead node for its controller requests;
    /// this one answers them at once, with the forwarding error), else the
    /// active controller when it is an alive broker (combined mode), else
    /// the lowest alive broker, which forwards admin requests; -1 with none.
    pub fn client_controller_id(&self, this_broker: i32, controller_reachable: bool) -> i32 {
        if !controller_reachable {
            return this_broker;
        }
        if self.is_alive(self.controller_id) {
            return self.controller_id;
        }
        self.registrations
            .values()
            .find(|b| b.is_alive())
            .map_or(-1, |b| b.node_id)
    }

    /// The leader of partition `index` of `topic` and its leader epoch;
    /// None when the partition does not exist.
    pub fn leader(&self, topic: &str, index: i32) -> Option<(i32, i32)> {
        self.partition(topic, index)
            .map(|p| (p.leader, p.leader_epoch))
    }

    /// Replicas of partition `p` whose broker is not alive (Metadata's
    /// `offline_replicas`).
    pub fn offline_replicas(&self, p: &PartitionRegistration) -> Vec<i32> {
        p.replicas
            .iter()
            .copied()
            .filter(|r| !self.is_alive(*r))
            .collect()
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

/// Unit-test fixture of the cluster's rule modules.
#[cfg(test)]
impl MetadataImage {
    /// Registers brokers 1..=3 with one PLAINTEXT endpoint (`h:1`), broker
    /// `id` with epoch `epoch(id)`, fenced when `fenced(id)`.
    pub(crate) fn register_three_test_brokers(
        &mut self,
        epoch: impl Fn(i32) -> i64,
        fenced: impl Fn(i32) -> bool,
    ) {
        for id in 1..=3 {
            self.registrations.insert(
                id,
                BrokerRegistration {
                    node_id: id,
                    incarnation_id: Uuid::nil(),
                    epoch: epoch(id),
                    endpoints: vec![Endpoint {
                        listener: "PLAINTEXT".into(),
                        host: "h".into(),
                        port: 1,
                    }],
                    rack: None,
                    fenced: fenced(id),
                    in_controlled_shutdown: false,
                },
            );
        }
    }
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

    fn single(p: i32) -> Vec<PartitionRegistration> {
        (0..p)
            .map(|_| PartitionRegistration {
                replicas: vec![1],
                isr: vec![1],
                elr: vec![],
                last_known_elr: Vec::new(),
                leader: 1,
                leader_epoch: 0,
                partition_epoch: 0,
                adding_replicas: vec![],
                removing_replicas: vec![],
            })
            .collect()
    }

    #[test]
    fn with_and_without_topic() {
        let img = MetadataImage::empty("c".into());
        let t = TopicMeta {
            name: "a".into(),
            id: Uuid::new_v4(),
            partitions: 2,
            configs: BTreeMap::new(),
            assignments: single(2),
        };
        let id = t.id;
        let img2 = img.with_topic(t);
        assert_eq!(img2.topic_by_id(&id).map(|t| t.partitions), Some(2));
        assert_eq!(img2.leader("a", 1), Some((1, 0)));
        assert_eq!(img2.leader("a", 2), None);
        let img3 = img2.without_topic("a");
        assert!(img3.topic("a").is_none() && img3.topic_by_id(&id).is_none());
        assert!(img3.version > img2.version && img2.version > img.version);
    }

    #[test]
    fn clients_see_alive_brokers_and_a_controller_among_them() {
        let mut img = MetadataImage::empty("c".into());
        for (id, fenced) in [(1, false), (2, true), (3, false)] {
            img.registrations.insert(
                id,
                BrokerRegistration {
                    node_id: id,
                    incarnation_id: Uuid::new_v4(),
                    epoch: 10 + i64::from(id),
                    endpoints: vec![Endpoint {
                        listener: "PLAINTEXT".into(),
                        host: "h".into(),
                        port: 9000 + id as u16,
                    }],
                    rack: None,
                    fenced,
                    in_controlled_shutdown: false,
                },
            );
        }
        let ids: Vec<i32> = img.brokers(None).iter().map(|b| b.node_id).collect();
        assert_eq!(ids, [1, 3]);
        img.controller_id = 2;
        assert_eq!(
            img.client_controller_id(1, true),
            1,
            "a fenced controller is not shown"
        );
        img.controller_id = 3;
        assert_eq!(img.client_controller_id(1, true), 3);
        let p = PartitionRegistration {
            replicas: vec![1, 2, 3],
            isr: vec![1, 3],
            elr: vec![],
            last_known_elr: Vec::new(),
            leader: 1,
            leader_epoch: 4,
            partition_epoch: 7,
            adding_replicas: vec![],
            removing_replicas: vec![],
        };
        assert_eq!(img.offline_replicas(&p), [2]);
        assert!(p.is_leader(1) && !p.is_leader(3));
    }
}
