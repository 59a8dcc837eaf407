//! A share group's offsets (KIP-932) for operators: DescribeShareGroupOffsets
//! (90), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92), run
//! on the shard that received the request. The group is checked (and its
//! record 15, the share-partitions with state, changed) on its coordinator
//! shard (`share_group_coordinator`); each share-partition's state is read,
//! initialized or deleted on the share coordinator leading its
//! `__share_group_state` partition (this broker's or another's), and the
//! windows of this broker's share-partition leaders are dropped after a
//! change, so the next ShareFetch reads the state again. Answers as Kafka
//! 4.4 gave them (probed with raw frames; docs/decisions/share-groups.md).

use std::rc::Rc;

use uuid::Uuid;

use super::error::GroupError;
use super::share_group_coordinator::{self as coordinator, StateScope, StateTopicsChange};
use crate::shard::owner::share_persist;
use crate::shard::remote::{ShareStateCall, ShareStateReply};
use crate::shard::share_store::ShareCoordinatorError;
use crate::shard::Shard;
use crate::share::state::ShareStateError;

/// A group-level refusal: the error and Kafka's message, if it has one.
pub type GroupRefusal = (GroupError, Option<String>);

/// One described share-partition: the share-partition start offset (-1
/// when the group has no state there) and the leader epoch of its state,
/// or why it could not be read.
#[derive(Debug)]
pub struct DescribedPartition {
    /// Partition index.
    pub partition: i32,
    /// (start offset, leader epoch), or the share coordinator's error.
    pub state: Result<(i64, i32), ShareCoordinatorError>,
}

/// One described topic: its name, id (nil when unknown) and partitions.
#[derive(Debug)]
pub struct DescribedTopic {
    /// Topic name.
    pub name: String,
    /// Topic id.
    pub id: Uuid,
    /// Partitions.
    pub partitions: Vec<DescribedPartition>,
}

/// `f` on `owner`, the group coordinator's shard of `group_id` (the
/// handler found it).
async fn on_group<R, F, Fut>(
    shard: &Rc<Shard>,
    owner: usize,
    group_id: &str,
    f: F,
) -> Result<R, GroupRefusal>
where
    R: Send + 'static,
    F: FnOnce(Rc<Shard>, String) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<R, GroupRefusal>> + 'static,
{
    let g = group_id.to_string();
    shard
        .invoke_on(owner, move |s| f(s, g))
        .await
        .map_err(|_| (GroupError::CoordinatorNotAvailable, None))?
}

/// DescribeShareGroupOffsets of `group_id`: `topics` (name, partitions),
/// or None for every share-partition the group has state for (record 15).
/// A partition without state, of an unknown topic, beyond the topic, or of
/// a group that is no share group is described at start offset -1 and
/// leader epoch 0 without an error, as Kafka 4.4 answers; a group that
/// does not exist gives no topics for None. Errors: the coordinator's
/// (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR,
/// COORDINATOR_NOT_AVAILABLE). `owner` is the group's coordinator shard
/// (as for every function here).
pub async fn describe(
    shard: &Rc<Shard>,
    owner: usize,
    group_id: &str,
    topics: Option<Vec<(String, Vec<i32>)>>,
) -> Result<Vec<DescribedTopic>, GroupRefusal> {
    let scope = on_group(shard, owner, group_id, |s, g| async move {
        coordinator::state_scope(&s, &g).map_err(|e| (e, None))
    })
    .await?;
    let image = shard.metadata();
    let asked: Vec<(String, Vec<i32>)> = match (topics, &scope) {
        (Some(t), _) => t,
        // A topic deleted since is left out (its id is no longer known).
        (None, StateScope::Share(state)) => state
            .iter()
            .filter_map(|(id, _, parts)| {
                image
                    .topic_by_id(id)
                    .map(|t| (t.name.to_string(), parts.clone()))
            })
            .collect(),
        (None, StateScope::NoGroup | StateScope::OtherType) => Vec::new(),
    };
    let mut out = Vec::new();
    for (name, parts) in asked {
        let meta = image.topic(&name).cloned();
        let id = meta.as_ref().map_or(Uuid::nil(), |t| t.id);
        let mut partitions = Vec::new();
        for p in parts {
            let state = match (&scope, &meta) {
                (StateScope::Share(_), Some(t)) if p >= 0 && p < t.partitions => {
                    summary(shard, group_id, t.id, p).await
                }
                _ => Ok((-1, 0)),
            };
            partitions.push(DescribedPartition {
                partition: p,
                state,
            });
        }
        out.push(DescribedTopic {
            name,
            id,
            partitions,
        });
    }
    Ok(out)
}

/// The (start offset, leader epoch) of one share-partition's state.
async fn summary(
    shard: &Rc<Shard>,
    group_id: &str,
    topic_id: Uuid,
    partition: i32,
) -> Result<(i64, i32), ShareCoordinatorError> {
    let key = (group_id.to_string(), topic_id, partition);
    match share_persist::state_call(shard, &key, ShareStateCall::Summary).await? {
        ShareStateReply::Summary((_, leader_epoch, start_offset)) => {
            Ok((start_offset, leader_epoch))
        }
        ShareStateReply::Done | ShareStateReply::Read(_) => Err(ShareCoordinatorError::Remote(
            crate::shard::remote::RemoteError::Unreachable {
                broker: -1,
                why: "the share coordinator answered a summary without it".into(),
            },
        )),
    }
}

/// One altered topic: name, id (nil when unknown) and each partition's
/// result.
#[derive(Debug)]
pub struct AlteredTopic {
    /// Topic name.
    pub name: String,
    /// Topic id.
    pub id: Uuid,
    /// (partition, result).
    pub partitions: Vec<(i32, Result<(), ShareCoordinatorError>)>,
}

fn unknown_partition() -> ShareCoordinatorError {
    ShareCoordinatorError::State(ShareStateError::UnknownTopicOrPartition)
}

/// AlterShareGroupOffsets of `group_id`: each (topic, [(partition, start
/// offset)]) gets that share-partition start offset, written by
/// InitializeShareGroupState with the next state epoch (so a leader's
/// write of the old state is fenced), and the leaders' windows on this
/// broker are dropped: the next consumer starts there. The group must be
/// empty; a missing share group is created empty (Kafka 4.4 does). Group
/// errors: NON_EMPTY_GROUP "The group is not empty.", GROUP_ID_NOT_FOUND
/// "Group G is not a share group.", the coordinator's. Partition errors:
/// UNKNOWN_TOPIC_OR_PARTITION for an unknown topic or partition, the share
/// coordinator's.
pub async fn alter(
    shard: &Rc<Shard>,
    owner: usize,
    group_id: &str,
    topics: Vec<(String, Vec<(i32, i64)>)>,
) -> Result<Vec<AlteredTopic>, GroupRefusal> {
    let image = shard.metadata();
    let mut valid: Vec<(Uuid, String, Vec<i32>)> = Vec::new();
    for (name, parts) in &topics {
        if let Some(t) = image.topic(name) {
            let ok: Vec<i32> = parts
                .iter()
                .map(|(p, _)| *p)
                .filter(|p| *p >= 0 && *p < t.partitions)
                .collect();
            if !ok.is_empty() {
                valid.push((t.id, name.clone(), ok));
            }
        }
    }
    let change = StateTopicsChange::Add(valid);
    on_group(shard, owner, group_id, move |s, g| async move {
        coordinator::change_state_topics(&s, &g, change).await
    })
    .await?;
    let mut out = Vec::new();
    for (name, parts) in topics {
        let meta = image.topic(&name).cloned();
        let mut results = Vec::new();
        let mut changed = Vec::new();
        for (p, offset) in parts {
            let r = match &meta {
                Some(t) if p >= 0 && p < t.partitions => {
                    let r = initialize(shard, group_id, t.id, p, offset).await;
                    changed.push(p);
                    r
                }
                _ => Err(unknown_partition()),
            };
            results.push((p, r));
        }
        if let Some(t) = &meta {
            if let Err(e) =
                share_persist::forget_windows(shard, group_id, &name, t.id, &changed).await
            {
                log::warn!("share group {group_id}: dropping the windows of {name}: {e}");
            }
        }
        out.push(AlteredTopic {
            name,
            id: meta.map_or(Uuid::nil(), |t| t.id),
            partitions: results,
        });
    }
    Ok(out)
}

/// Initializes one share-partition's state at `start_offset` with the
/// state epoch after its current one.
async fn initialize(
    shard: &Rc<Shard>,
    group_id: &str,
    topic_id: Uuid,
    partition: i32,
    start_offset: i64,
) -> Result<(), ShareCoordinatorError> {
    let key = (group_id.to_string(), topic_id, partition);
    let state_epoch = match share_persist::state_call(shard, &key, ShareStateCall::Summary).await? {
        ShareStateReply::Summary((epoch, _, _)) => epoch.saturating_add(1),
        ShareStateReply::Done | ShareStateReply::Read(_) => 1,
    };
    share_persist::state_call(
        shard,
        &key,
        ShareStateCall::Initialize {
            state_epoch,
            start_offset,
        },
    )
    .await
    .map(|_| ())
}

/// One topic of DeleteShareGroupOffsets: name, id (nil when unknown) and
/// its result.
#[derive(Debug)]
pub struct DeletedTopic {
    /// Topic name.
    pub name: String,
    /// Topic id.
    pub id: Uuid,
    /// The result: UNKNOWN_TOPIC_OR_PARTITION for an unknown topic, or the
    /// share coordinator's error.
    pub result: Result<(), ShareCoordinatorError>,
}

/// DeleteShareGroupOffsets of `group_id`: the state of every partition of
/// each topic is deleted (DeleteShareGroupState), the topic leaves record
/// 15 and this broker's leaders drop their windows, so the next consumer
/// starts from `share.auto.offset.reset`. The group must be an empty share
/// group. Group errors: NON_EMPTY_GROUP "The group is not empty.",
/// GROUP_ID_NOT_FOUND "Group G not found." / "Group G is not a share
/// group.", the coordinator's.
pub async fn delete(
    shard: &Rc<Shard>,
    owner: usize,
    group_id: &str,
    topics: Vec<String>,
) -> Result<Vec<DeletedTopic>, GroupRefusal> {
    let image = shard.metadata();
    let ids: Vec<Uuid> = topics
        .iter()
        .filter_map(|n| image.topic(n).map(|t| t.id))
        .collect();
    let change = StateTopicsChange::Remove(ids);
    on_group(shard, owner, group_id, move |s, g| async move {
        coordinator::change_state_topics(&s, &g, change).await
    })
    .await?;
    let mut out = Vec::new();
    for name in topics {
        let Some(t) = image.topic(&name).cloned() else {
            out.push(DeletedTopic {
                name,
                id: Uuid::nil(),
                result: Err(unknown_partition()),
            });
            continue;
        };
        let parts: Vec<i32> = (0..t.partitions).collect();
        let result = coordinator::delete_state(shard, group_id, t.id, &name, &parts).await;
        out.push(DeletedTopic {
            name,
            id: t.id,
            result,
        });
    }
    Ok(out)
}
