//! Applying a published metadata image on a shard: the partitions this
//! shard owns and this broker replicates are opened (their logs recovered
//! off the reactor, `opening.rs`; served once open), those the metadata log
//! removed are dropped and their directories deleted (off the reactor) for
//! the cause [`super::removal`] finds, and topic settings and registrations
//! are updated. Nothing here touches a file.
//!
//! Images only move forward: one that reflects fewer log entries than the
//! image held is ignored with an error line (the publisher never sends one;
//! see `cluster::quorum::publisher`). A directory opens only for the topic
//! id its `partition.metadata` names, and is deleted only for a record that
//! deleted that id.

use std::sync::Arc;

use super::removal::{self, Held, Verdict};
use super::{now_ms, Shard};
use crate::cluster::leadership::ReplicaState;
use crate::cluster::metadata::{ImageOrder, MetadataImage};
use crate::cluster::topic_config;
use crate::storage::StorageError;

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
    /// stops the broker ([`super::fatal`]) and keeps its directory. Opens
    /// run off the reactor and end later (a failure is logged then), so
    /// this gives Ok.
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
        let previous = self.metadata.replace(image.clone());
        self.drop_removed(&image, settled);
        self.open_assigned(&image);
        self.metadata_applied.notify_all();
        if !same_topics(&previous, &image) {
            self.topics_changed();
        }
        Ok(())
    }

    /// Drops the held partitions the image removes (and cancels the opens
    /// of those being opened), deleting their directories with the cause
    /// logged, off the reactor (`opening.rs`); refuses (and stops the
    /// broker) where no record explains a removal.
    fn drop_removed(&self, image: &MetadataImage, settled: bool) {
        let node = self.config.node_id;
        let held: Vec<(Held, bool)> = self
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
                    (held, false)
                })
            })
            .chain(self.opening_held().into_iter().map(|h| (h, true)))
            .collect();
        let verdicts: Vec<(Held, bool, Verdict)> = held
            .into_iter()
            .map(|(h, opening)| {
                let v = removal::judge(image, &h, node, settled);
                (h, opening, v)
            })
            .filter(|(_, _, v)| *v != Verdict::Keep)
            .collect();
        for (held, opening, verdict) in verdicts {
            match verdict {
                Verdict::Keep => {}
                Verdict::Delete(cause) if opening => self.cancel_open(&held, cause),
                Verdict::Delete(cause) => {
                    let removed = {
                        let mut map = self.partitions.borrow_mut();
                        let removed = map.get_mut(&held.topic).and_then(|m| m.remove(&held.index));
                        if map.get(&held.topic).is_some_and(|m| m.is_empty()) {
                            map.remove(&held.topic);
                        }
                        removed
                    };
                    if let Some(p) = removed {
                        // No new file work for it from now on; what its I/O
                        // thread still holds lands before the deletion.
                        p.retire();
                        let dir = self.partition_dir(p.topic(), p.index());
                        self.delete_dir_later(&dir, &held, cause, true);
                    }
                }
                Verdict::Unexplained(why) => {
                    let dir = self.partition_dir(&held.topic, held.index);
                    super::fatal::stop_broker(format!(
                        "refusing to delete {}: {why}",
                        dir.display()
                    ));
                }
            }
        }
    }

    /// Starts opening the partitions of `image` this shard owns and this
    /// broker replicates (off the reactor, `opening.rs`), and updates those
    /// it holds.
    fn open_assigned(&self, image: &Arc<MetadataImage>) {
        let node = self.config.node_id;
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
                if self.is_opening(&topic.name, p) {
                    // Its end takes the image held then.
                    continue;
                }
                self.start_open(image, topic, p, settings.log.clone());
            }
        }
    }
}

/// Whether two images hold the same topics: the same names, ids and
/// partition counts (settings, replicas and leaders aside). Cheap: images
/// change far more often than their topics do.
fn same_topics(a: &MetadataImage, b: &MetadataImage) -> bool {
    a.topics.len() == b.topics.len()
        && a.topics
            .iter()
            .zip(b.topics.iter())
            .all(|((na, ta), (nb, tb))| {
                na == nb
                    && (std::sync::Arc::ptr_eq(ta, tb)
                        || (ta.id == tb.id && ta.partitions == tb.partitions))
            })
}
