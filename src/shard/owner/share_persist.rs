//! A share-partition's window persisted through the share coordinator
//! (KIP-932): read on first use (ReadShareGroupState semantics, with the
//! partition's leader epoch) and written after every change Kafka persists
//! (WriteShareGroupState semantics: acknowledgements, releases, lock
//! expiries and the SPSO moves they cause) before the change is answered.
//!
//! The window is written whole (the SPSO and its runs, acquired records as
//! available with their delivery count, as `SharePartition::snapshot`
//! gives them): the coordinator merges runs with the later one winning,
//! so the persisted state is the window as it is after the change. Writes
//! of one shard are made one at a time, each taking the window as it is
//! when its turn comes, so a later write never carries an older window.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::shard::partition::Partition;
use crate::shard::remote::{RemoteError, ShareStateCall, ShareStateReply};
use crate::shard::share_store::ShareCoordinatorError;
use crate::shard::Shard;
use crate::share::config::GroupShareSettings;
use crate::share::partition::SharePartition;
use crate::share::state::{ReadAnswer, ShareStateError, StateKey, WriteRequest};

use super::share::{LedShare, ShareKey};

/// How long a state call retries while the state partition is being
/// created, elected or loaded (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
/// on this broker, COORDINATOR_LOAD_IN_PROGRESS).
const RETRY_DEADLINE: Duration = Duration::from_secs(10);
/// Pause between two tries.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

thread_local! {
    /// One write at a time per shard (see the module's note).
    static WRITES: Rc<glommio::sync::Semaphore> = Rc::new(glommio::sync::Semaphore::new(1));
    /// Write tickets handed out on this shard: one per change to persist,
    /// taken right after the change, so a write that snapshots a window
    /// after ticket `t` was handed out carries every change up to `t`.
    static TICKETS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many write tickets this shard has handed out (a window loaded now
/// has nothing older left to write).
pub(super) fn tickets_issued() -> u64 {
    TICKETS.with(|t| t.get())
}

/// A new write ticket.
fn take_ticket() -> u64 {
    TICKETS.with(|t| {
        t.set(t.get() + 1);
        t.get()
    })
}

fn state_key(key: &ShareKey) -> StateKey {
    (key.0.to_string(), key.1, key.2)
}

/// Whether `e` may pass by retrying: the state partition is being created,
/// elected or loaded, here or on the broker the call went to
/// (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
/// NOT_COORDINATOR), or that broker could not be reached.
fn transient(e: &ShareCoordinatorError) -> bool {
    use crate::cluster::error::CoordinatorLookupError as L;
    match e {
        ShareCoordinatorError::LoadInProgress | ShareCoordinatorError::NotCoordinator => true,
        ShareCoordinatorError::Lookup(l) => matches!(
            l,
            L::TopicMissing { .. } | L::NoLeader { .. } | L::NotCoordinator { .. }
        ),
        ShareCoordinatorError::Remote(r) => match r {
            RemoteError::Unreachable { .. } | RemoteError::NotInstalled => true,
            RemoteError::Refused { .. } => false,
        },
        ShareCoordinatorError::State(_)
        | ShareCoordinatorError::Unavailable(_)
        | ShareCoordinatorError::Append { .. } => false,
    }
}

/// `call` for `key` through the installed [`ShareStateStore`](crate::shard::share_store::ShareStateStore)
/// (COORDINATOR_NOT_AVAILABLE before start-up installed it).
async fn on_coordinator(
    shard: &Rc<Shard>,
    key: &StateKey,
    call: ShareStateCall,
) -> Result<ShareStateReply, ShareCoordinatorError> {
    let store = shard
        .share_store()
        .ok_or(ShareCoordinatorError::Remote(RemoteError::NotInstalled))?;
    store.call(shard.clone(), key.clone(), call).await
}

/// Whether `e` says the share-partition's state was never initialized.
fn uninitialized(e: &ShareCoordinatorError) -> bool {
    matches!(
        e,
        ShareCoordinatorError::State(ShareStateError::ReadUninitialized)
    )
}

/// Reads `key`'s state at `leader_epoch` (retried, forwarded).
async fn read_state(
    shard: &Rc<Shard>,
    key: &StateKey,
    leader_epoch: i32,
) -> Result<ReadAnswer, ShareCoordinatorError> {
    let call = ShareStateCall::Read { leader_epoch };
    match retried(|| on_coordinator(shard, key, call.clone())).await? {
        ShareStateReply::Read(a) => Ok(a),
        // Only a read answers a read; a store answering otherwise is
        // treated as not reached.
        ShareStateReply::Done | ShareStateReply::Summary(_) => {
            Err(ShareCoordinatorError::Remote(RemoteError::Unreachable {
                broker: -1,
                why: "the share coordinator answered a read without its state".into(),
            }))
        }
    }
}

/// Runs `call` until it succeeds, fails for good, or [`RETRY_DEADLINE`]
/// passes (then its last error).
async fn retried<R, F, Fut>(mut call: F) -> Result<R, ShareCoordinatorError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<R, ShareCoordinatorError>>,
{
    let deadline = Instant::now() + RETRY_DEADLINE;
    loop {
        match call().await {
            Err(e) if transient(&e) && Instant::now() < deadline => {
                glommio::timer::sleep(RETRY_PAUSE).await;
            }
            other => return other,
        }
    }
}

/// The window of `key` as its persisted state gives it, read at the
/// partition's leader epoch. A share-partition whose state was never
/// initialized is initialized first (state epoch 0, start offset -1), and a
/// start offset of -1 is resolved by the group's `share.auto.offset.reset`
/// (`super::share::start_offset_for`), as Kafka's share-partition does;
/// the window runs with the group's `settings`.
/// Errors: the share coordinator's ([`ShareCoordinatorError`]).
pub async fn load(
    shard: &Rc<Shard>,
    part: &Partition,
    key: &ShareKey,
    settings: &GroupShareSettings,
) -> Result<LedShare, ShareCoordinatorError> {
    let leader_epoch = part.leader_epoch().max(0);
    let sk = state_key(key);
    let answer = match read_state(shard, &sk, leader_epoch).await {
        Err(e) if uninitialized(&e) => {
            let init = ShareStateCall::Initialize {
                state_epoch: 0,
                start_offset: -1,
            };
            retried(|| on_coordinator(shard, &sk, init.clone())).await?;
            read_state(shard, &sk, leader_epoch).await?
        }
        other => other?,
    };
    let start = if answer.start_offset >= 0 {
        answer.start_offset
    } else {
        super::share::start_offset_for(part, settings.auto_offset_reset)
    };
    let window = SharePartition::from_snapshot(start, &answer.batches, settings.window.clone());
    Ok(LedShare::loaded(
        part.leader_epoch(),
        answer.state_epoch,
        window,
    ))
}

/// Whether a window of `key` read at `state_epoch` still matches the
/// persisted state (read at `leader_epoch`): false when the state was
/// deleted or initialized again with another state epoch since
/// (AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups). A
/// failed read keeps the window (true): its next write is checked anyway.
pub async fn still_current(
    shard: &Rc<Shard>,
    key: &ShareKey,
    state_epoch: i32,
    leader_epoch: i32,
) -> bool {
    match read_state(shard, &state_key(key), leader_epoch).await {
        Ok(a) => a.state_epoch == state_epoch,
        Err(e) if uninitialized(&e) => false,
        Err(e) => {
            log::debug!(
                "share-partition {}:{}:{}: state check: {e}",
                key.0,
                key.1,
                key.2
            );
            true
        }
    }
}

/// Writes the window of `key` as it is now on this shard (after waiting
/// for this shard's earlier writes), to be called right after a change.
/// Group commit: changes made while a write is in flight are carried
/// together by the next one (each write takes the whole window), so a
/// caller whose change a later write already carried returns at once. A
/// refused or failed write drops the window, so the next use reads the
/// persisted state again. Nothing to do when the window is gone. Errors:
/// the share coordinator's.
pub async fn persist(shard: &Rc<Shard>, key: &ShareKey) -> Result<(), ShareCoordinatorError> {
    let ticket = take_ticket();
    let turn = WRITES.with(Rc::clone);
    let _permit = turn.acquire_permit(1).await;
    let (req, carried) = {
        let map = shard.share_partitions.borrow();
        let Some(led) = map.get(key) else {
            return Ok(());
        };
        if led.persisted_through >= ticket {
            return Ok(());
        }
        let (start_offset, batches) = led.window().snapshot();
        let req = WriteRequest {
            state_epoch: led.state_epoch(),
            leader_epoch: led.leader_epoch().max(0),
            start_offset,
            delivery_complete_count: -1,
            batches,
        };
        (req, tickets_issued())
    };
    let sk = state_key(key);
    let call = ShareStateCall::Write(req);
    let written = retried(|| on_coordinator(shard, &sk, call.clone()))
        .await
        .map(|_| ());
    if written.is_ok() {
        if let Some(led) = shard.share_partitions.borrow_mut().get_mut(key) {
            led.persisted_through = led.persisted_through.max(carried);
        }
    }
    if let Err(e) = &written {
        log::warn!(
            "share-partition {}:{}:{}: state write failed ({e}); its window is dropped",
            key.0,
            key.1,
            key.2
        );
        shard.share_partitions.borrow_mut().remove(key);
    }
    written
}

/// `call` for the share-partition `key` on the share coordinator leading
/// its `__share_group_state` partition (this broker's or another's),
/// retried while that partition is being created, elected or loaded, as
/// the share-partition leaders' calls are. For the group coordinator's
/// calls (DescribeShareGroupOffsets' summaries, AlterShareGroupOffsets'
/// initializations, the deletions of DeleteGroups and
/// DeleteShareGroupOffsets). Errors: the share coordinator's.
pub async fn state_call(
    shard: &Rc<Shard>,
    key: &StateKey,
    call: ShareStateCall,
) -> Result<ShareStateReply, ShareCoordinatorError> {
    retried(|| on_coordinator(shard, key, call.clone())).await
}

/// Drops the in-memory windows of `group` on `partitions` of topic
/// `topic` (id `topic_id`) on the shards of this broker that own them, so
/// the next ShareFetch reads the persisted state again (after
/// DeleteGroups, AlterShareGroupOffsets, DeleteShareGroupOffsets). One
/// cross-shard call per owner shard; nothing is locked. Errors: a shard
/// that could not be reached.
pub async fn forget_windows(
    shard: &Rc<Shard>,
    group: &str,
    topic: &str,
    topic_id: uuid::Uuid,
    partitions: &[i32],
) -> Result<(), crate::mesh::ShardError> {
    let mut by_owner: std::collections::BTreeMap<usize, Vec<i32>> = Default::default();
    for p in partitions {
        by_owner.entry(shard.owner(topic, *p)).or_default().push(*p);
    }
    for (owner, parts) in by_owner {
        let group: std::sync::Arc<str> = group.into();
        shard
            .invoke_on(owner, move |s| async move {
                let mut map = s.share_partitions.borrow_mut();
                for p in parts {
                    map.remove(&(group.clone(), topic_id, p));
                }
            })
            .await?;
    }
    Ok(())
}
