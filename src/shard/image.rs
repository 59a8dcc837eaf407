//! Applying a published metadata image on a shard: the partitions this
//! shard owns and this broker replicates are opened (recovering their logs),
//! those the metadata log removed are dropped and their directories deleted
//! for the cause [`super::removal`] finds, and topic settings and
//! registrations are updated.
//!
//! Images only move forward: one that reflects fewer log entries than the
//! image held is ignored with an error line (the publisher never sends one;
//! see `cluster::quorum::publisher`). A directory opens only for the topic
//! id its `partition.metadata` names, and is deleted only for a record that
//! deleted that id.

use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use uuid::Uuid;

use super::removal::{self, Cause, DirVerdict, Held, Verdict};
use super::{now_ms, Partition, Shard, TopicPartition};
use crate::cluster::leadership::ReplicaState;
use crate::cluster::metadata::{ImageOrder, MetadataImage};
use crate::cluster::topic_config;
use crate::storage::{PartitionLog, StorageError};

impl Shard {
    /// Applies a newer image (see the module docs), not settled: a
    /// partition a reassignment moved off this broker is kept.
    pub fn apply_metadata(&self, image: Arc<MetadataImage>) -> Result<(), StorageError> {
        self.apply_metadata_settled(image, false)
    }

    /// [`Shard::apply_metadata`]; `settled`: the image holds this process's
    /// own broker registration, so it is past the history replayed at
    /// start-up, and a partition whose replicas no longer name this broker
    /// is dropped and its directory deleted (Kafka's StopReplica with
    /// delete). A partition whose topic is gone with no record deleting it
    /// stops the broker ([`super::fatal`]) and keeps its directory. Errors
    /// with the first log that could not be opened.
    pub fn apply_metadata_settled(
        &self,
        image: Arc<MetadataImage>,
        settled: bool,
    ) -> Result<(), StorageError> {
        match image.order_against(&self.metadata.borrow()) {
            ImageOrder::Newer => {}
            ImageOrder::Same => return Ok(()),
            ImageOrder::Older => {
                let held = self.metadata.borrow();
                log::error!(
                    "shard {}: ignoring a metadata image at offset {} (version {}): it holds offset {} (version {})",
                    self.id,
                    image.offset,
                    image.version,
                    held.offset,
                    held.version
                );
                return Ok(());
            }
        }
        self.metadata.replace(image.clone());
        self.drop_removed(&image, settled);
        let first_error = self.open_assigned(&image);
        self.metadata_applied.notify_all();
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Drops the held partitions the image removes, deleting their
    /// directories with the cause logged; refuses (and stops the broker)
    /// where no record explains a removal.
    fn drop_removed(&self, image: &MetadataImage, settled: bool) {
        let node = self.config.node_id;
        let verdicts: Vec<(TopicPartition, Verdict)> = self
            .partitions
            .borrow()
            .iter()
            .flat_map(|(t, parts)| {
                parts.iter().map(move |(i, p)| {
                    let held = Held {
                        topic: t.clone(),
                        index: *i,
                        topic_id: p.topic_id(),
                    };
                    ((t.clone(), *i), removal::judge(image, &held, node, settled))
                })
            })
            .filter(|(_, v)| *v != Verdict::Keep)
            .collect();
        for ((topic, index), verdict) in verdicts {
            match verdict {
                Verdict::Keep => {}
                Verdict::Delete(cause) => {
                    let removed = {
                        let mut map = self.partitions.borrow_mut();
                        let removed = map.get_mut(&topic).and_then(|m| m.remove(&index));
                        if map.get(&topic).is_some_and(|m| m.is_empty()) {
                            map.remove(&topic);
                        }
                        removed
                    };
                    if let Some(p) = removed {
                        let dir = self.partition_dir(p.topic(), p.index());
                        delete_partition_dir(&dir, p.topic(), p.index(), &p.topic_id(), &cause);
                    }
                }
                Verdict::Unexplained(why) => {
                    let dir = self.partition_dir(&topic, index);
                    super::fatal::stop_broker(format!(
                        "refusing to delete {}: {why}",
                        dir.display()
                    ));
                }
            }
        }
    }

    /// Opens the partitions of `image` this shard owns and this broker
    /// replicates, and updates those it holds; gives the first open error.
    fn open_assigned(&self, image: &MetadataImage) -> Option<StorageError> {
        let node = self.config.node_id;
        let mut first_error = None;
        for topic in image.topics.values() {
            let settings = topic_config::settings(&self.config, &topic.configs);
            for (p, reg) in topic.assignments.iter().enumerate() {
                let p = p as i32;
                // A broker keeps the partitions it is a replica of, on the
                // shard that owns them.
                if self.owner(&topic.name, p) != self.id {
                    continue;
                }
                let Some(replica) = ReplicaState::of(reg, node) else {
                    continue;
                };
                let leads = replica.is_leader;
                if let Some(existing) = self.partition(&topic.name, p) {
                    if existing.topic_id() != topic.id {
                        // Held under an id `drop_removed` kept (the broker
                        // is stopping): leave it as it is.
                        continue;
                    }
                    if existing.settings() != settings {
                        existing.set_settings(settings.clone());
                    }
                    let became_leader = leads && !existing.is_leader();
                    let resigned = !leads && existing.is_leader();
                    existing.set_registration(node, reg, now_ms());
                    // The coordinators follow their partitions' leadership
                    // (another broker coordinates the groups or
                    // transactional ids of a resigned partition now).
                    if resigned || became_leader {
                        self.leadership_changed(&existing, became_leader);
                    }
                    continue;
                }
                let dir = self.partition_dir(&topic.name, p);
                let on_disk = match crate::cluster::import::read_partition_metadata(&dir) {
                    Ok(id) => id,
                    Err(e) => {
                        log::error!("cannot open {}: {e}", dir.display());
                        first_error.get_or_insert(StorageError::Io(e));
                        continue;
                    }
                };
                match removal::judge_directory(image, topic.id, on_disk) {
                    DirVerdict::Open => {}
                    DirVerdict::DeleteStale(cause) => {
                        let stale = on_disk.unwrap_or(topic.id);
                        delete_partition_dir(&dir, &topic.name, p, &stale, &cause);
                    }
                    DirVerdict::NotYet => {
                        let id = on_disk.unwrap_or_default();
                        if self
                            .held_back
                            .borrow_mut()
                            .insert((topic.name.clone(), p, id))
                        {
                            log::info!(
                                "{}: not opened for topic id {} at metadata offset {}: the directory belongs to topic id {id}",
                                dir.display(),
                                topic.id,
                                image.offset
                            );
                        }
                        continue;
                    }
                }
                let opened = PartitionLog::open(&dir, settings.log.clone()).and_then(|mut log| {
                    crate::cluster::import::ensure_partition_metadata(&dir, &topic.id)?;
                    log.restore_high_watermark(self.take_checkpointed_hw(&topic.name, p));
                    Ok(log)
                });
                match opened {
                    Ok(log) => {
                        let part = Rc::new(Partition::new(
                            topic.name.clone(),
                            p,
                            topic.id,
                            log,
                            settings.clone(),
                        ));
                        part.set_registration(node, reg, now_ms());
                        self.partitions
                            .borrow_mut()
                            .entry(topic.name.clone())
                            .or_default()
                            .insert(p, part.clone());
                        if leads {
                            self.leadership_changed(&part, true);
                        }
                    }
                    Err(e) => {
                        log::error!("cannot open {}: {e}", dir.display());
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
        first_error
    }
}

/// Deletes the directory of partition `index` of `topic` (topic id `id`)
/// for `cause`, logged at warn level with the cause. Kafka renames to
/// `<dir>.<id>-delete` first so a crash mid-delete leaves a directory that
/// is recognisably garbage; Fjord does the same.
fn delete_partition_dir(dir: &Path, topic: &str, index: i32, id: &Uuid, cause: &Cause) {
    log::warn!("deleting {} (topic id {id}): {cause}", dir.display());
    let tomb = dir.with_file_name(format!("{topic}-{index}.{}-delete", id.simple()));
    match std::fs::rename(dir, &tomb) {
        Ok(()) => {
            if let Err(e) = std::fs::remove_dir_all(&tomb) {
                log::warn!("cannot remove {}: {e}", tomb.display());
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => log::warn!("cannot rename {} for deletion: {e}", dir.display()),
    }
}
