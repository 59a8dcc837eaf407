//! The metadata quorum's state machine: applying committed entries builds
//! the next [`MetadataImage`] ([`MetadataImage::apply`]), which is handed to
//! the node's publisher (shard 0 sends it to every shard) before the entry's
//! writer is answered, so a client that gets a successful CreateTopics can use
//! the topic on this node at once.
//!
//! Snapshots are the image itself as JSON, kept in memory and in
//! `__cluster_metadata-0/quorum-snapshot.json`; they compact the log.

use crate::security::scram::{ScramCredential, ScramMechanism};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;

use futures_lite::StreamExt;
use openraft::entry::RaftEntry;
use openraft::storage::{EntryResponder, RaftSnapshotBuilder, RaftStateMachine, Snapshot};
use openraft::{EntryPayload, OptionalSend};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::log_store::QUORUM_DIR;
use super::types::{LogId, MetadataSnapshot, SnapshotMeta, StoredMembership, TypeConfig};
use crate::cluster::controller::write_atomic;
use crate::cluster::metadata::{
    BrokerRegistration, MetadataImage, PartitionRegistration, RemovedTopic, TopicMeta,
};

const SNAPSHOT_FILE: &str = "quorum-snapshot.json";

/// Hands a newly applied image to the node (shard 0 publishes it to every
/// shard); the future ends once every shard has it.
pub type Publish = Rc<dyn Fn(Arc<MetadataImage>) -> Pin<Box<dyn Future<Output = ()>>>>;

/// One topic in a snapshot.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct TopicSnapshot {
    name: String,
    id: Uuid,
    configs: BTreeMap<String, String>,
    assignments: Vec<PartitionRegistration>,
}

/// The replicated part of an image, as a snapshot stores it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ImageSnapshot {
    offset: u64,
    registrations: Vec<BrokerRegistration>,
    topics: Vec<TopicSnapshot>,
    next_producer_id: i64,
    broker_configs: Vec<(Option<i32>, BTreeMap<String, String>)>,
    /// Deleted topics with the offset of their `RemoveTopic` record
    /// (absent in snapshots written before it was kept).
    #[serde(default)]
    removed_topics: Vec<(Uuid, RemovedTopic)>,
    /// SCRAM credentials (absent in snapshots written before they were
    /// kept).
    #[serde(default)]
    scram_credentials: Vec<(String, ScramMechanism, ScramCredential)>,
    /// ACLs by id (absent in snapshots written before they were kept).
    #[serde(default)]
    acls: Vec<(Uuid, crate::acl::model::AclBinding)>,
    /// Client quotas: entity, key, value (absent in snapshots written
    /// before they were kept).
    #[serde(default)]
    client_quotas: Vec<(
        crate::quota::model::QuotaEntity,
        String,
        crate::quota::model::QuotaValue,
    )>,
    /// Finalized feature levels (absent in snapshots written before they
    /// were kept).
    #[serde(default)]
    finalized_features: BTreeMap<String, i16>,
    /// Group configs (KIP-848's GROUP resource), by group id.
    #[serde(default)]
    group_configs: Vec<(String, BTreeMap<String, String>)>,
}

impl ImageSnapshot {
    fn of(image: &MetadataImage) -> ImageSnapshot {
        ImageSnapshot {
            offset: image.offset,
            registrations: image.registrations.values().cloned().collect(),
            topics: image
                .topics
                .values()
                .map(|t| TopicSnapshot {
                    name: t.name.to_string(),
                    id: t.id,
                    configs: t.configs.clone(),
                    assignments: t.assignments.clone(),
                })
                .collect(),
            next_producer_id: image.next_producer_id,
            broker_configs: image.broker_configs.clone().into_iter().collect(),
            removed_topics: image
                .removed_topics
                .iter()
                .map(|(id, r)| (*id, r.clone()))
                .collect(),
            scram_credentials: image
                .scram_credentials
                .iter()
                .flat_map(|(user, m)| {
                    m.iter()
                        .map(move |(mech, c)| (user.clone(), *mech, c.clone()))
                })
                .collect(),
            acls: image.acls.iter().map(|(id, a)| (*id, a.clone())).collect(),
            client_quotas: image
                .client_quotas
                .iter()
                .flat_map(|(e, m)| m.iter().map(move |(k, v)| (e.clone(), k.clone(), *v)))
                .collect(),
            finalized_features: image.finalized_features.clone(),
            group_configs: image.group_configs.clone().into_iter().collect(),
        }
    }

    fn into_image(self, base: &MetadataImage) -> MetadataImage {
        let mut img = MetadataImage::empty(base.cluster_id.clone());
        img.version = base.version + 1;
        img.controller_id = base.controller_id;
        img.offset = self.offset;
        img.registrations = self
            .registrations
            .into_iter()
            .map(|b| (b.node_id, b))
            .collect();
        for t in self.topics {
            let name: Arc<str> = Arc::from(t.name.as_str());
            img.topic_ids.insert(t.id, name.clone());
            img.topics.insert(
                name.clone(),
                Arc::new(TopicMeta {
                    name,
                    id: t.id,
                    partitions: t.assignments.len() as i32,
                    configs: t.configs,
                    assignments: t.assignments,
                }),
            );
        }
        img.next_producer_id = self.next_producer_id;
        img.broker_configs = self.broker_configs.into_iter().collect();
        img.removed_topics = self.removed_topics.into_iter().collect();
        img.acls = self.acls.into_iter().collect();
        img.finalized_features = self.finalized_features;
        img.group_configs = self.group_configs.into_iter().collect();
        for (e, k, v) in self.client_quotas {
            img.client_quotas.entry(e).or_default().insert(k, v);
        }
        for (user, mech, c) in self.scram_credentials {
            img.scram_credentials
                .entry(user)
                .or_default()
                .insert(mech, c);
        }
        img
    }
}

/// Takes a snapshot's data (the image as JSON, as a leader sends it in
/// InstallSnapshot or a controller in a fetched log chunk) and the image
/// it replaces; gives the snapshot's image. Errors (`InvalidData`) when the
/// JSON is not an image snapshot.
pub(crate) fn image_from_snapshot(data: &[u8], base: &MetadataImage) -> io::Result<MetadataImage> {
    let img: ImageSnapshot =
        serde_json::from_slice(data).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    Ok(img.into_image(base))
}

/// A snapshot as stored on disk.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct StoredSnapshot {
    meta: SnapshotMeta,
    data: Vec<u8>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    last_applied: Option<LogId>,
    membership: StoredMembership,
    image: Arc<MetadataImage>,
    snapshot: Option<StoredSnapshot>,
}

/// The state machine (and, cloned, its snapshot builder).
#[derive(Clone)]
pub struct StateMachine {
    inner: Rc<RefCell<Inner>>,
    publish: Publish,
}

impl std::fmt::Debug for StateMachine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateMachine")
            .field("inner", &self.inner)
            .finish()
    }
}

fn invalid(path: &Path, e: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {e}", path.display()),
    )
}

impl StateMachine {
    /// The state machine of the log under `data_dir`, starting from the
    /// stored snapshot if there is one (else from `empty`), publishing
    /// through `publish`. Blocking: called once at start-up.
    pub fn open(
        data_dir: &Path,
        empty: MetadataImage,
        publish: Publish,
    ) -> io::Result<StateMachine> {
        let dir = data_dir.join(QUORUM_DIR);
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(SNAPSHOT_FILE);
        let snapshot: Option<StoredSnapshot> = match std::fs::read(&path) {
            Ok(b) => Some(serde_json::from_slice(&b).map_err(|e| invalid(&path, e))?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let (image, last_applied, membership) = match &snapshot {
            Some(s) => {
                let img: ImageSnapshot =
                    serde_json::from_slice(&s.data).map_err(|e| invalid(&path, e))?;
                (
                    img.into_image(&empty),
                    s.meta.last_log_id,
                    s.meta.last_membership.clone(),
                )
            }
            None => (empty, None, StoredMembership::default()),
        };
        Ok(StateMachine {
            inner: Rc::new(RefCell::new(Inner {
                dir,
                last_applied,
                membership,
                image: Arc::new(image),
                snapshot,
            })),
            publish,
        })
    }

    /// A state machine kept in memory only (a broker-only node, which
    /// fetches the log instead of storing it).
    pub fn in_memory(empty: MetadataImage, publish: Publish) -> StateMachine {
        StateMachine {
            inner: Rc::new(RefCell::new(Inner {
                dir: PathBuf::new(),
                last_applied: None,
                membership: StoredMembership::default(),
                image: Arc::new(empty),
                snapshot: None,
            })),
            publish,
        }
    }

    /// The image in its snapshot form (JSON), for a broker-only node.
    pub fn image_bytes(&self) -> io::Result<Vec<u8>> {
        serde_json::to_vec(&ImageSnapshot::of(&self.inner.borrow().image)).map_err(io::Error::other)
    }

    /// A broker-only node: takes the image of a snapshot (from
    /// [`StateMachine::image_bytes`]) and publishes it.
    /// An image older than the one applied is refused: the metadata a
    /// node acts on never moves back.
    pub async fn install_fetched(&self, snapshot: &[u8]) -> io::Result<()> {
        {
            let mut i = self.inner.borrow_mut();
            let img = image_from_snapshot(snapshot, &i.image)?;
            if img.offset < i.image.offset {
                return Err(io::Error::other(format!(
                    "the snapshot reflects metadata offset {}, behind the {} applied here",
                    img.offset, i.image.offset
                )));
            }
            i.image = Arc::new(img);
        }
        (self.publish)(self.image()).await;
        Ok(())
    }

    /// A broker-only node: applies fetched committed entries (offset,
    /// records) after its image, in order, and publishes the result.
    pub async fn apply_fetched(
        &self,
        entries: &[(u64, Vec<crate::cluster::records::MetadataRecord>)],
    ) {
        let mut changed = false;
        {
            let mut i = self.inner.borrow_mut();
            for (offset, records) in entries {
                if *offset > i.image.offset {
                    i.image = Arc::new(i.image.apply(*offset, records));
                    changed = true;
                }
            }
        }
        if changed {
            (self.publish)(self.image()).await;
        }
    }

    /// The image applied so far.
    pub fn image(&self) -> Arc<MetadataImage> {
        self.inner.borrow().image.clone()
    }

    async fn store_snapshot(&self, s: StoredSnapshot) -> io::Result<()> {
        let path = self.inner.borrow().dir.join(SNAPSHOT_FILE);
        let bytes = serde_json::to_vec(&s).map_err(io::Error::other)?;
        glommio::executor()
            .spawn_blocking(move || write_atomic(&path, &bytes))
            .await?;
        self.inner.borrow_mut().snapshot = Some(s);
        Ok(())
    }
}

/// The image the metadata log under `data_dir` holds, read without starting
/// the quorum (offline tools on a stopped broker, such as `fjord
/// import-logs`): the stored snapshot, then every entry after it. Entries
/// not yet committed are included, which only makes such a tool's checks
/// stricter.
pub fn read_offline(data_dir: &Path) -> io::Result<MetadataImage> {
    let empty = MetadataImage::empty(String::new());
    let publish: Publish = Rc::new(|_| Box::pin(async {}));
    let sm = StateMachine::open(data_dir, empty, publish)?;
    let (mut image, from) = {
        let i = sm.inner.borrow();
        (
            (*i.image).clone(),
            i.last_applied.as_ref().map_or(0, |l| l.index + 1),
        )
    };
    for entry in super::log_store::read_entries(data_dir)? {
        if entry.index() < from {
            continue;
        }
        if let EntryPayload::Normal(data) = &entry.payload {
            image = image.apply(entry.index(), &data.records);
        }
    }
    Ok(image)
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    type SnapshotData = Vec<u8>;

    async fn build_snapshot(&mut self) -> Result<MetadataSnapshot, io::Error> {
        let (meta, data) = {
            let i = self.inner.borrow();
            let data =
                serde_json::to_vec(&ImageSnapshot::of(&i.image)).map_err(io::Error::other)?;
            let meta = SnapshotMeta {
                last_log_id: i.last_applied,
                last_membership: i.membership.clone(),
            };
            (meta, data)
        };
        self.store_snapshot(StoredSnapshot {
            meta: meta.clone(),
            data: data.clone(),
        })
        .await?;
        Ok(Snapshot {
            meta,
            snapshot: data,
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotData = Vec<u8>;
    type SnapshotBuilder = StateMachine;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), io::Error> {
        let i = self.inner.borrow();
        Ok((i.last_applied, i.membership.clone()))
    }

    async fn apply<Strm>(&mut self, mut entries: Strm) -> Result<(), io::Error>
    where
        Strm: futures_lite::Stream<Item = Result<EntryResponder<TypeConfig>, io::Error>>
            + Unpin
            + OptionalSend,
    {
        let mut responders = Vec::new();
        let mut changed = false;
        while let Some(item) = entries.next().await {
            let (entry, responder) = item?;
            let log_id = entry.log_id();
            {
                let mut i = self.inner.borrow_mut();
                match &entry.payload {
                    EntryPayload::Blank => {}
                    EntryPayload::Normal(data) => {
                        i.image = Arc::new(i.image.apply(log_id.index, &data.records));
                        changed = true;
                    }
                    EntryPayload::Membership(m) => {
                        i.membership = StoredMembership::new(Some(log_id), m.clone());
                    }
                }
                i.last_applied = Some(log_id);
            }
            if let Some(r) = responder {
                responders.push(r);
            }
        }
        if changed {
            let image = self.image();
            (self.publish)(image).await;
        }
        for r in responders {
            r.send(());
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Vec<u8>,
    ) -> Result<(), io::Error> {
        {
            let mut i = self.inner.borrow_mut();
            i.image = Arc::new(image_from_snapshot(&snapshot, &i.image)?);
            i.last_applied = meta.last_log_id;
            i.membership = meta.last_membership.clone();
        }
        self.store_snapshot(StoredSnapshot {
            meta: meta.clone(),
            data: snapshot,
        })
        .await?;
        let image = self.image();
        (self.publish)(image).await;
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<MetadataSnapshot>, io::Error> {
        Ok(self.inner.borrow().snapshot.clone().map(|s| Snapshot {
            meta: s.meta,
            snapshot: s.data,
        }))
    }
}

#[cfg(test)]
mod snapshot_tests {
    use super::*;
    use crate::cluster::records::MetadataRecord;
    use crate::quota::model::QuotaValue;

    /// Client quotas are carried in a snapshot (and a snapshot of an
    /// earlier version, without them, reads as none).
    #[test]
    fn client_quotas_survive_a_snapshot() {
        let base = MetadataImage::empty("c".into());
        let record = |entity: Vec<(String, Option<String>)>, key: &str, v: f64| {
            MetadataRecord::ClientQuota {
                entity,
                key: key.into(),
                value: QuotaValue(v),
                remove: false,
            }
        };
        let image = base.apply(
            3,
            &[
                record(
                    vec![("user".into(), Some("alice".into()))],
                    "producer_byte_rate",
                    1024.0,
                ),
                record(
                    vec![
                        ("user".into(), None),
                        ("client-id".into(), Some("x".into())),
                    ],
                    "request_percentage",
                    12.5,
                ),
            ],
        );
        let data = serde_json::to_vec(&ImageSnapshot::of(&image)).unwrap();
        let back = image_from_snapshot(&data, &base).unwrap();
        assert_eq!(back.client_quotas, image.client_quotas);
        assert_eq!(back.client_quotas.len(), 2);
        let mut old: serde_json::Value = serde_json::from_slice(&data).unwrap();
        old.as_object_mut().unwrap().remove("client_quotas");
        let back = image_from_snapshot(old.to_string().as_bytes(), &base).unwrap();
        assert!(back.client_quotas.is_empty());
    }

    /// Finalized feature levels are carried in a snapshot (level 0 removes
    /// a feature; a snapshot written before they were kept reads as none).
    #[test]
    fn finalized_features_survive_a_snapshot() {
        let base = MetadataImage::empty("c".into());
        let level = |name: &str, level: i16| MetadataRecord::FeatureLevel {
            name: name.into(),
            level,
        };
        let image = base.apply(
            5,
            &[
                level("metadata.version", 33),
                level("group.version", 1),
                level("group.version", 0),
                level("eligible.leader.replicas.version", 1),
            ],
        );
        assert_eq!(image.finalized_features.len(), 2);
        assert_eq!(image.finalized_features_epoch(), 5);
        let data = serde_json::to_vec(&ImageSnapshot::of(&image)).unwrap();
        let back = image_from_snapshot(&data, &base).unwrap();
        assert_eq!(back.finalized_features, image.finalized_features);
        let mut old: serde_json::Value = serde_json::from_slice(&data).unwrap();
        old.as_object_mut().unwrap().remove("finalized_features");
        let back = image_from_snapshot(old.to_string().as_bytes(), &base).unwrap();
        assert!(back.finalized_features.is_empty());
    }
}
