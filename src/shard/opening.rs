//! Partitions opened off the reactor. When an image makes this broker a
//! replica of a partition this shard owns, the shard notes the partition
//! as opening and hands the slow part to its background thread (`io.rs`):
//! reading the directory's `partition.metadata`, deleting a stale
//! directory of a deleted topic id, recovering the log
//! (`PartitionLog::open`) and rebuilding the producer and transaction
//! state ([`Rebuilt`]). Back on the shard, the partition is created from
//! what the thread opened, with the registration of the image held *then*
//! (images go on applying while it opens, in order), and becomes servable.
//! Until then Produce, Fetch and ListOffsets get NOT_LEADER_OR_FOLLOWER
//! (`LeadershipError::ReplicaOpening`), as Kafka answers for a replica it
//! does not host yet.
//!
//! A later image that removes an opening partition cancels it: the
//! deletion of its directory (for the image's cause, logged with it) is
//! queued on the same background thread, so it runs after the open and
//! nothing opened is kept or served. A directory's deletion and a later
//! open of the same name are in that one queue too, in image order; the
//! deletion of a partition that was served waits first for the file work
//! its I/O thread still had queued (`io::IoMark`), so no job of the old
//! partition lands in the new directory.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use uuid::Uuid;

use super::io;
use super::notify::Notify;
use super::partition::{Partition, Rebuilt};
use super::removal::{self, Cause, DirVerdict, Held};
use super::{current, now_ms, stall, Shard};
use crate::cluster::metadata::{MetadataImage, TopicMeta};
use crate::cluster::topic_config;
use crate::storage::{LogConfig, StorageError};

/// The partitions a shard is opening (see the module docs).
#[derive(Default)]
pub(super) struct Opens {
    /// Topic → partition index → the open under way.
    entries: RefCell<HashMap<Arc<str>, HashMap<i32, Opening>>>,
    next_id: Cell<u64>,
    /// Bumped when an open ends (opened, failed, cancelled).
    ended: Rc<Notify>,
}

/// One open under way.
#[derive(Debug, Clone, Copy)]
struct Opening {
    /// Tells this open from a later one of the same partition.
    id: u64,
    /// The topic id it opens for.
    topic_id: Uuid,
    /// The metadata offset of the image that started it.
    since: u64,
}

/// What the background thread did for one open.
enum Outcome {
    /// The log, recovered, with its state rebuilt.
    Opened(Box<Rebuilt>),
    /// The directory belongs to another topic id the image does not know
    /// as deleted: neither opened nor deleted.
    NotYet(Uuid),
    /// The open failed.
    Failed(StorageError),
}

impl Opens {
    fn get(&self, topic: &str, index: i32) -> Option<Opening> {
        self.entries
            .borrow()
            .get(topic)
            .and_then(|m| m.get(&index))
            .copied()
    }

    fn remove(&self, topic: &str, index: i32) -> Option<Opening> {
        let mut map = self.entries.borrow_mut();
        let removed = map.get_mut(topic).and_then(|m| m.remove(&index));
        if map.get(topic).is_some_and(|m| m.is_empty()) {
            map.remove(topic);
        }
        removed
    }

    /// Whether an open started at an offset at or below `up_to` is under way.
    fn any_since(&self, up_to: u64) -> bool {
        self.entries
            .borrow()
            .values()
            .flat_map(|m| m.values())
            .any(|o| o.since <= up_to)
    }
}

impl Shard {
    /// Whether this shard is opening `topic`-`partition` (see the module
    /// docs): it is then not served yet.
    pub fn is_opening(&self, topic: &str, partition: i32) -> bool {
        self.opens.get(topic, partition).is_some()
    }

    /// Every partition being opened, as the removal rules take them.
    pub(super) fn opening_held(&self) -> Vec<Held> {
        self.opens
            .entries
            .borrow()
            .iter()
            .flat_map(|(t, m)| {
                m.iter().map(move |(i, o)| Held {
                    topic: t.clone(),
                    index: *i,
                    topic_id: o.topic_id,
                })
            })
            .collect()
    }

    /// Takes the image that made this broker a replica of partition `index`
    /// of `topic` (owned by this shard, not held, not opening) and the log
    /// config; starts opening it on the background thread (see the module
    /// docs). The image's cause decides a stale directory's deletion there.
    pub(super) fn start_open(
        &self,
        image: &Arc<MetadataImage>,
        topic: &TopicMeta,
        index: i32,
        config: LogConfig,
    ) {
        let Ok(shard) = current() else {
            log::error!("no shard on this thread to open {}-{index}", topic.name);
            return;
        };
        let id = self.opens.next_id.get();
        self.opens.next_id.set(id + 1);
        self.opens
            .entries
            .borrow_mut()
            .entry(topic.name.clone())
            .or_default()
            .insert(
                index,
                Opening {
                    id,
                    topic_id: topic.id,
                    since: image.offset,
                },
            );
        let dir = self.partition_dir(&topic.name, index);
        let data_dir = self.config.data_dir();
        let (name, want, img) = (topic.name.clone(), topic.id, image.clone());
        let node = self.config.node_id;
        let job = io::run_in_background(move || {
            super::fault::hold_open(&data_dir, &name, index);
            open_directory(&dir, &name, index, want, &img, config, node)
        });
        let name = topic.name.clone();
        stall::spawn_local("partition open", async move {
            let outcome = match job.await {
                Ok(o) => o,
                Err(e) => Outcome::Failed(StorageError::Io(e)),
            };
            shard.finish_open(&name, index, id, want, outcome);
        })
        .detach();
    }

    /// An open ended: a live one (not cancelled by a later image) becomes
    /// a partition of this shard, with the registration and settings of
    /// the image held now; waiting callers and the replica fetchers are
    /// told.
    fn finish_open(&self, topic: &Arc<str>, index: i32, id: u64, want: Uuid, outcome: Outcome) {
        let live = self.opens.get(topic, index).is_some_and(|o| o.id == id);
        if live {
            self.opens.remove(topic, index);
        }
        let dir = self.partition_dir(topic, index);
        match outcome {
            Outcome::Failed(e) => log::error!("cannot open {}: {e}", dir.display()),
            Outcome::NotYet(on_disk) => {
                if self
                    .held_back
                    .borrow_mut()
                    .insert((topic.clone(), index, on_disk))
                {
                    log::info!(
                        "{}: not opened for topic id {want} at metadata offset {}: the directory belongs to topic id {on_disk}",
                        dir.display(),
                        self.metadata().offset
                    );
                }
            }
            Outcome::Opened(rebuilt) if !live => {
                // A later image removed it; its deletion is queued after
                // this open. Nothing of it is kept.
                log::info!(
                    "{}: opened after a later image removed it; not served",
                    dir.display()
                );
                drop(rebuilt);
            }
            Outcome::Opened(rebuilt) => self.install_opened(topic, index, want, *rebuilt),
        }
        self.opens.ended.notify_all();
        // The replica fetchers look at the partitions again.
        self.metadata_applied.notify_all();
    }

    /// Makes an opened log a partition of this shard, as the image held now
    /// places it (when that image still gives this topic id the partition;
    /// otherwise the broker is stopping on an unexplained removal and the
    /// log is left as it is).
    fn install_opened(&self, topic: &Arc<str>, index: i32, want: Uuid, mut rebuilt: Rebuilt) {
        if self.partition(topic, index).is_some() {
            // Never: an open starts only for a partition not held.
            log::warn!("{topic}-{index}: opened while already held; the new open is dropped");
            return;
        }
        let node = self.config.node_id;
        let image = self.metadata();
        let Some((meta, reg)) = image
            .topic(topic)
            .filter(|t| t.id == want)
            .and_then(|t| t.partition(index).map(|r| (t, r)))
        else {
            log::warn!(
                "{topic}-{index}: opened, but the image at offset {} no longer gives topic id {want} this partition; not served",
                image.offset
            );
            return;
        };
        let settings = topic_config::settings(&self.config, &meta.configs);
        rebuilt.restore_high_watermark(self.take_checkpointed_hw(topic, index));
        let part = Rc::new(Partition::from_rebuilt(
            topic.clone(),
            index,
            want,
            rebuilt,
            settings,
        ));
        // From now on its file work runs on the I/O thread, in order.
        part.defer_file_work();
        part.set_registration(node, reg, now_ms());
        let leads = reg.is_leader(node);
        self.partitions
            .borrow_mut()
            .entry(topic.clone())
            .or_default()
            .insert(index, part.clone());
        if leads {
            // The coordinators follow their partitions' leadership.
            self.leadership_changed(&part, true);
        }
    }

    /// Takes a partition being opened that an image removed, with the cause;
    /// cancels the open and queues the deletion of its directory after it.
    pub(super) fn cancel_open(&self, held: &Held, cause: Cause) {
        if self.opens.remove(&held.topic, held.index).is_none() {
            return;
        }
        let dir = self.partition_dir(&held.topic, held.index);
        self.delete_dir_later(&dir, held, cause, false);
        self.opens.ended.notify_all();
    }

    /// Queues the deletion of a partition directory for `cause` on the
    /// background thread, after every open and deletion queued before it;
    /// with `after_io_work` (a partition that was served, already retired)
    /// also after every job its I/O thread has queued so far. The cause is
    /// logged with the deletion (`delete_partition_dir`).
    pub(super) fn delete_dir_later(
        &self,
        dir: &Path,
        held: &Held,
        cause: Cause,
        after_io_work: bool,
    ) {
        let mark = if after_io_work {
            match io::IoMark::queue() {
                Ok(m) => Some(m),
                Err(e) => {
                    // No I/O thread: nothing of the partition is queued.
                    log::debug!("no I/O thread to wait for: {e}");
                    None
                }
            }
        } else {
            None
        };
        let (dir, held2) = (dir.to_path_buf(), held.clone());
        let job = io::run_in_background(move || {
            if let Some(m) = mark {
                m.wait();
            }
            delete_partition_dir(&dir, &held2.topic, held2.index, &held2.topic_id, &cause);
        });
        let what = format!("{}-{}", held.topic, held.index);
        stall::spawn_local("partition directory deletion", async move {
            if let Err(e) = job.await {
                log::error!("{what}: the directory deletion did not run: {e}");
            }
        })
        .detach();
    }

    /// Resolves once no open started by an image at or below metadata
    /// offset `up_to` is under way, or at `deadline` (None: no limit).
    /// Gives whether they all ended.
    pub async fn wait_opened(&self, up_to: u64, deadline: Option<Instant>) -> bool {
        loop {
            let g = self.opens.ended.generation();
            if !self.opens.any_since(up_to) {
                return true;
            }
            let wait = super::notify::any_changed(vec![(self.opens.ended.clone(), g)]);
            match deadline {
                None => wait.await,
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    futures_lite::future::or(wait, async {
                        glommio::timer::sleep(left).await;
                    })
                    .await;
                }
            }
        }
    }
}

/// Waits until no shard of this broker is still opening a partition that
/// an image at or below metadata offset `up_to` gave it, or until
/// `deadline` (None: no limit); gives whether they all ended (false also
/// when a shard did not answer).
pub async fn opened_everywhere(shard: &Rc<Shard>, up_to: u64, deadline: Option<Instant>) -> bool {
    let mut waits = Vec::new();
    for target in 0..shard.shards {
        let me = shard.clone();
        waits.push(stall::spawn_local("wait for opens", async move {
            me.invoke_on(target, move |s| async move {
                s.wait_opened(up_to, deadline).await
            })
            .await
        }));
    }
    let mut all = true;
    for w in waits {
        all &= matches!(w.await, Ok(true));
    }
    all
}

/// The background thread's part of an open (blocking): reads the
/// directory's topic id, deletes it first when it is a deleted topic id's
/// (for the image's cause), leaves it when it belongs to an id the image
/// does not know as deleted, else recovers the log, writes
/// `partition.metadata` for `want` when missing, rebuilds the producer
/// and transaction state and, where `image` makes `node` the leader, adds
/// the leader epoch to the leader-epoch cache with its checkpoint written
/// here (`Rebuilt::assign_leader_epoch`).
fn open_directory(
    dir: &Path,
    topic: &str,
    index: i32,
    want: Uuid,
    image: &MetadataImage,
    config: LogConfig,
    node: i32,
) -> Outcome {
    let on_disk = match crate::cluster::import::read_partition_metadata(dir) {
        Ok(id) => id,
        Err(e) => return Outcome::Failed(StorageError::Io(e)),
    };
    match removal::judge_directory(image, want, on_disk) {
        DirVerdict::Open => {}
        DirVerdict::DeleteStale(cause) => {
            let stale = on_disk.unwrap_or(want);
            delete_partition_dir(dir, topic, index, &stale, &cause);
        }
        DirVerdict::NotYet => return Outcome::NotYet(on_disk.unwrap_or_default()),
    }
    let opened = Rebuilt::open(topic, index, dir, config).and_then(|mut rebuilt| {
        crate::cluster::import::ensure_partition_metadata(dir, &want)?;
        let led = image
            .topic(topic)
            .filter(|t| t.id == want)
            .and_then(|t| t.partition(index))
            .filter(|reg| reg.is_leader(node));
        if let Some(reg) = led {
            // A failed write fails the open, as any other file of it: the
            // partition is not served (KAFKA_STORAGE_ERROR to its clients).
            rebuilt.assign_leader_epoch(reg.leader_epoch)?;
        }
        Ok(rebuilt)
    });
    match opened {
        Ok(r) => Outcome::Opened(Box::new(r)),
        Err(e) => Outcome::Failed(e),
    }
}

/// Deletes the directory of partition `index` of `topic` (topic id `id`)
/// for `cause`, logged at warn level with the cause. Kafka renames to
/// `<dir>.<id>-delete` first so a crash mid-delete leaves a directory that
/// is recognisably garbage; Fjord does the same. Blocking: the shard's
/// background thread runs it.
pub(super) fn delete_partition_dir(dir: &Path, topic: &str, index: i32, id: &Uuid, cause: &Cause) {
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
