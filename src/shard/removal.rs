//! Why a shard may delete a partition's directory, decided without I/O.
//!
//! A directory holds acknowledged records; it is deleted only for a cause
//! the metadata log states, and the cause is logged with the deletion:
//!
//! - its topic id was deleted by a `RemoveTopic` record at log offset N
//!   (the image keeps that offset in [`MetadataImage::removed_topics`]),
//!   also when the name now belongs to a topic created again under a new
//!   id;
//! - a reassignment left this broker out of the partition's replicas
//!   (Kafka's StopReplica with delete), judged only on an image `settled`
//!   past this process's own broker registration, since an image replayed
//!   at start-up may show a move that a later entry undoes.
//!
//! A topic gone from the image with no record deleting it has no cause:
//! the deletion is refused and the broker stops with an error
//! ([`Verdict::Unexplained`]) rather than lose the only copy.

use std::sync::Arc;

use uuid::Uuid;

use crate::cluster::metadata::MetadataImage;

/// A partition a shard holds: its topic name, index and the topic id it was
/// opened under (the one in its directory's `partition.metadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// Topic name.
    pub topic: Arc<str>,
    /// Partition index.
    pub index: i32,
    /// Topic id.
    pub topic_id: Uuid,
}

/// The metadata cause of a directory's deletion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// The topic id was deleted by the `RemoveTopic` record at `offset`;
    /// `recreated_as` is the id the name has now, if it was created again.
    TopicDeleted {
        /// Metadata log offset of the `RemoveTopic` record.
        offset: u64,
        /// The id of the topic now under the same name.
        recreated_as: Option<Uuid>,
    },
    /// The replicas no longer name this broker (a reassignment moved the
    /// partition away) at this partition epoch, in the image at `offset`.
    MovedAway {
        /// The registration's partition epoch.
        partition_epoch: i32,
        /// The image's metadata log offset.
        offset: u64,
        /// The replicas the registration names.
        replicas: Vec<i32>,
    },
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cause::TopicDeleted {
                offset,
                recreated_as: None,
            } => write!(
                f,
                "the topic was deleted by the metadata record at offset {offset}"
            ),
            Cause::TopicDeleted {
                offset,
                recreated_as: Some(id),
            } => write!(
                f,
                "the topic was deleted by the metadata record at offset {offset} and created again with id {id}"
            ),
            Cause::MovedAway {
                partition_epoch,
                offset,
                replicas,
            } => write!(
                f,
                "a reassignment moved it to replicas {replicas:?} (partition epoch {partition_epoch}, metadata offset {offset})"
            ),
        }
    }
}

/// What to do with a held partition on a new image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Keep it (still a replica, or a move away not yet judged).
    Keep,
    /// Drop the partition and delete its directory, for this cause.
    Delete(Cause),
    /// The image says to drop it but no record explains why: refuse, and
    /// stop the broker with this reason.
    Unexplained(String),
}

/// Takes the newly applied image, a held partition, this broker's id and
/// whether the image is settled (holds this process's own registration);
/// gives what to do with the partition's directory (see the module docs).
pub fn judge(image: &MetadataImage, held: &Held, node: i32, settled: bool) -> Verdict {
    let current = image.topic(&held.topic);
    if let Some(t) = current.filter(|t| t.id == held.topic_id) {
        return match t.partition(held.index) {
            Some(reg) if !reg.replicas.is_empty() && !reg.replicas.contains(&node) => {
                if settled {
                    Verdict::Delete(Cause::MovedAway {
                        partition_epoch: reg.partition_epoch,
                        offset: image.offset,
                        replicas: reg.replicas.clone(),
                    })
                } else {
                    Verdict::Keep
                }
            }
            Some(_) => Verdict::Keep,
            None => Verdict::Unexplained(format!(
                "the metadata image at offset {} gives topic {} ({}) {} partition(s), and no record removes partition {}",
                image.offset, held.topic, held.topic_id, t.partitions, held.index
            )),
        };
    }
    match image.removed_topics.get(&held.topic_id) {
        Some(r) => Verdict::Delete(Cause::TopicDeleted {
            offset: r.offset,
            recreated_as: current.map(|t| t.id),
        }),
        None => Verdict::Unexplained(match current {
            Some(t) => format!(
                "the metadata image at offset {} names topic {} with id {}, and no record deleted the id {} its directory belongs to",
                image.offset, held.topic, t.id, held.topic_id
            ),
            None => format!(
                "the metadata image at offset {} has no topic {} ({}), and no record deleted it",
                image.offset, held.topic, held.topic_id
            ),
        }),
    }
}

/// What to do with a directory on disk before a partition opens it for
/// `image`'s topic id `want` (its `partition.metadata` names `on_disk`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirVerdict {
    /// The directory is this topic's (or new, or has no id yet): open it.
    Open,
    /// The directory holds a deleted topic id: delete it for this cause,
    /// then open a new one.
    DeleteStale(Cause),
    /// The directory holds an id the image does not know as deleted: a
    /// later incarnation of the name (an image replayed from before it) or
    /// data from elsewhere. Neither opened nor deleted.
    NotYet,
}

/// Takes the image, the topic id it gives the partition and the id its
/// directory names (None: no directory or no `partition.metadata`); gives
/// whether to open, delete a stale copy first, or leave the directory.
pub fn judge_directory(image: &MetadataImage, want: Uuid, on_disk: Option<Uuid>) -> DirVerdict {
    match on_disk {
        None => DirVerdict::Open,
        Some(id) if id == want => DirVerdict::Open,
        Some(id) => match image.removed_topics.get(&id) {
            Some(r) => DirVerdict::DeleteStale(Cause::TopicDeleted {
                offset: r.offset,
                recreated_as: Some(want),
            }),
            None => DirVerdict::NotYet,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::metadata::{PartitionRegistration, RemovedTopic, TopicMeta};

    fn reg(replicas: &[i32]) -> PartitionRegistration {
        PartitionRegistration {
            replicas: replicas.to_vec(),
            isr: replicas.to_vec(),
            elr: vec![],
            last_known_elr: vec![],
            leader: replicas.first().copied().unwrap_or(-1),
            leader_epoch: 0,
            partition_epoch: 4,
            adding_replicas: vec![],
            removing_replicas: vec![],
        }
    }

    fn image_with(offset: u64, topic: Option<(Uuid, &[i32])>) -> MetadataImage {
        let mut img = MetadataImage::empty("c".into());
        img.offset = offset;
        if let Some((id, replicas)) = topic {
            img = img.with_topic(TopicMeta {
                name: "t".into(),
                id,
                partitions: 1,
                configs: Default::default(),
                assignments: vec![reg(replicas)],
            });
        }
        img
    }

    fn held(id: Uuid) -> Held {
        Held {
            topic: "t".into(),
            index: 0,
            topic_id: id,
        }
    }

    #[test]
    fn a_topic_gone_without_a_record_is_refused() {
        let a = Uuid::new_v4();
        let img = image_with(10, None);
        for settled in [false, true] {
            assert!(matches!(
                judge(&img, &held(a), 1, settled),
                Verdict::Unexplained(_)
            ));
        }
        // Another id under the name, the held one never deleted.
        let img = image_with(10, Some((Uuid::new_v4(), &[1])));
        assert!(matches!(
            judge(&img, &held(a), 1, true),
            Verdict::Unexplained(_)
        ));
    }

    #[test]
    fn a_deleted_id_is_removed_with_its_record() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let mut img = image_with(20, None);
        img.removed_topics.insert(
            a,
            RemovedTopic {
                name: "t".into(),
                offset: 12,
            },
        );
        assert_eq!(
            judge(&img, &held(a), 1, false),
            Verdict::Delete(Cause::TopicDeleted {
                offset: 12,
                recreated_as: None
            })
        );
        let mut again = image_with(20, Some((b, &[1])));
        again.removed_topics = img.removed_topics.clone();
        assert_eq!(
            judge(&again, &held(a), 1, false),
            Verdict::Delete(Cause::TopicDeleted {
                offset: 12,
                recreated_as: Some(b)
            })
        );
        assert_eq!(judge(&again, &held(b), 1, false), Verdict::Keep);
    }

    #[test]
    fn a_move_away_is_judged_only_when_settled() {
        let a = Uuid::new_v4();
        let img = image_with(30, Some((a, &[2, 3])));
        assert_eq!(judge(&img, &held(a), 1, false), Verdict::Keep);
        assert_eq!(
            judge(&img, &held(a), 1, true),
            Verdict::Delete(Cause::MovedAway {
                partition_epoch: 4,
                offset: 30,
                replicas: vec![2, 3]
            })
        );
        let img = image_with(30, Some((a, &[1, 2])));
        assert_eq!(judge(&img, &held(a), 1, true), Verdict::Keep);
    }

    #[test]
    fn a_directory_opens_only_for_its_own_id() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let mut img = image_with(5, Some((a, &[1])));
        assert_eq!(judge_directory(&img, a, None), DirVerdict::Open);
        assert_eq!(judge_directory(&img, a, Some(a)), DirVerdict::Open);
        // A replayed image gives the name its first id; the directory holds
        // the later one: left alone.
        assert_eq!(judge_directory(&img, a, Some(b)), DirVerdict::NotYet);
        // The directory is of a deleted id: stale.
        img.removed_topics.insert(
            b,
            RemovedTopic {
                name: "t".into(),
                offset: 3,
            },
        );
        assert_eq!(
            judge_directory(&img, a, Some(b)),
            DirVerdict::DeleteStale(Cause::TopicDeleted {
                offset: 3,
                recreated_as: Some(a)
            })
        );
    }
}
