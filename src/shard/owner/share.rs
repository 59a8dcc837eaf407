//! Share-partitions (KIP-932) on the shard that leads the topic partition:
//! one in-flight window ([`SharePartition`]) per (group, topic id,
//! partition), read from its persisted state on the group's first
//! ShareFetch of the partition (`share_persist`: through the share
//! coordinator, a new state starting where the group's
//! `share.auto.offset.reset` says), held in memory on the leader's shard
//! and written back after each change Kafka persists; the group's settings
//! (lock duration, delivery limit, isolation level) come with each request
//! ([`ShareRead::settings`]). [`share_on`]
//! makes the one cross-shard call of a request's partitions on one owner:
//! acknowledgements first (all or nothing per partition), then a release of
//! the member's records when its session closed, then acquisition from a
//! log read (the Fetch read path: whole batches below the high watermark,
//! control batches included, as Kafka 4.4 acquires them). Acquisition
//! locks expire by a timer on the shard.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use uuid::Uuid;

use crate::cluster::leadership::{LeadershipError, Requester};
use crate::mesh::ShardError;
use crate::shard::partition::Partition;
use crate::shard::share_store::ShareCoordinatorError;
use crate::shard::{now_ms, Shard};
use crate::share::config::{AutoOffsetReset, GroupShareSettings};
use crate::share::partition::{AckType, AcquiredRange, ShareError, SharePartition};
use crate::storage::batch::BatchHeader;
use crate::storage::{cache, ReadMode, StorageError};

/// A share-partition's key on its leader's shard: (group id, topic id,
/// partition index).
pub type ShareKey = (Arc<str>, Uuid, i32);

/// A share-partition's window with the leader epoch it was built in and
/// the state epoch of its persisted state: a new leader epoch (this broker
/// led the partition again after another did) reads the persisted state
/// again, as the in-memory window is stale.
#[derive(Debug)]
pub struct LedShare {
    leader_epoch: i32,
    state_epoch: i32,
    window: SharePartition,
    /// The last write ticket (`share_persist`) whose change a successful
    /// write carried; a window read from the share coordinator covers
    /// every ticket handed out before.
    pub(super) persisted_through: u64,
}

impl LedShare {
    /// A window read from the share coordinator under `leader_epoch`, its
    /// state at `state_epoch`.
    pub fn loaded(leader_epoch: i32, state_epoch: i32, window: SharePartition) -> LedShare {
        LedShare {
            leader_epoch,
            state_epoch,
            window,
            persisted_through: super::share_persist::tickets_issued(),
        }
    }

    /// The partition's leader epoch the window was read under.
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch
    }

    /// The state epoch of the persisted state (WriteShareGroupState's).
    pub fn state_epoch(&self) -> i32 {
        self.state_epoch
    }

    /// The in-flight window.
    pub fn window(&self) -> &SharePartition {
        &self.window
    }

    /// The in-flight window, to change (the dead-letter writer archives
    /// what it wrote).
    pub(super) fn window_mut(&mut self) -> &mut SharePartition {
        &mut self.window
    }
}

/// Where a share-partition with no persisted start offset begins, as the
/// group's `share.auto.offset.reset` says: `latest` the high watermark,
/// `earliest` the log start, `by_duration:` the first batch written since
/// then (ListOffsets' lookup by timestamp), else the high watermark.
pub(super) fn start_offset_for(part: &Partition, reset: AutoOffsetReset) -> i64 {
    match reset {
        AutoOffsetReset::Latest => part.high_watermark(),
        AutoOffsetReset::Earliest => part.log_start_offset(),
        AutoOffsetReset::ByDuration(ms) => {
            match part.offset_for_timestamp(now_ms().saturating_sub(ms)) {
                Ok(Some((offset, _))) => offset
                    .max(part.log_start_offset())
                    .min(part.high_watermark()),
                Ok(None) => part.high_watermark(),
                Err(e) => {
                    log::warn!("{}-{}: by_duration lookup: {e}", part.topic(), part.index());
                    part.high_watermark()
                }
            }
        }
    }
}

/// One acknowledgement batch as a request carries it: `first..=last` and
/// one type for the whole range or one per offset (codes 0 Gap, 1 Accept,
/// 2 Release, 3 Reject; ShareFetch/ShareAcknowledge v1).
#[derive(Debug, Clone)]
pub struct AckBatch {
    /// First offset.
    pub first: i64,
    /// Last offset (inclusive).
    pub last: i64,
    /// `AcknowledgeTypes`.
    pub types: Vec<i8>,
}

/// What a request asks of one share-partition, as sent to its owner.
#[derive(Debug, Clone)]
pub struct ShareRead {
    /// Group id.
    pub group: Arc<str>,
    /// Member id.
    pub member: Arc<str>,
    /// Topic name.
    pub topic: Arc<str>,
    /// Topic id.
    pub topic_id: Uuid,
    /// Partition index.
    pub partition: i32,
    /// Acknowledgements, applied before anything else.
    pub acks: Vec<AckBatch>,
    /// Release every record the member holds here after the
    /// acknowledgements (its share session closed).
    pub release_member: bool,
    /// Acquire records (a ShareFetch that is not a close).
    pub fetch: bool,
    /// Byte limit of the log read (bytes; the request's `MaxBytes` shared
    /// by its partitions); the first batch is read even if larger.
    pub max_bytes: u64,
    /// `MaxRecords`: whole batches are acquired until at least this many
    /// records are (Kafka 4.4's `batch_optimized` acquisition).
    pub max_records: usize,
    /// The group's share-partition settings in force (its `share.*`
    /// configs over the broker's `group.share.*`), read by the handler.
    pub settings: GroupShareSettings,
    /// The request opened a share session (ShareFetch epoch 0): a window
    /// held here is first checked against the share coordinator's state
    /// epoch and dropped when the state was changed or deleted meanwhile
    /// (AlterShareGroupOffsets, DeleteShareGroupOffsets or DeleteGroups
    /// handled by another broker, which cannot drop this window itself).
    pub revalidate: bool,
}

/// Why a share-partition could not be read; each maps to its Kafka code
/// in `crate::error`.
#[derive(Debug, thiserror::Error)]
pub enum ShareReadError {
    /// Not the leader here (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
    /// KAFKA_STORAGE_ERROR).
    #[error(transparent)]
    Leadership(#[from] LeadershipError),
    /// The log refused the read (its storage error's code).
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Reading the batches' bytes failed (KAFKA_STORAGE_ERROR).
    #[error("reading batches: {0}")]
    Io(#[from] std::io::Error),
    /// The share-partition's persisted state could not be read or
    /// initialized (the share coordinator's code).
    #[error("share-partition state: {0}")]
    State(#[source] ShareCoordinatorError),
}

/// Why a partition's acknowledgements were refused (none of them applied).
#[derive(Debug, thiserror::Error)]
pub enum ShareAckError {
    /// The window refused a range (INVALID_RECORD_STATE, INVALID_REQUEST).
    #[error(transparent)]
    Window(#[from] ShareError),
    /// An acknowledge type unknown at this version, or a list of types
    /// that is neither one type nor one per offset (INVALID_REQUEST).
    #[error("acknowledge types {types:?} for {first}..={last}")]
    BadTypes {
        /// First offset.
        first: i64,
        /// Last offset.
        last: i64,
        /// The types sent.
        types: Vec<i8>,
    },
    /// The acknowledgements were applied but their state could not be
    /// written (the share coordinator's code: FENCED_STATE_EPOCH,
    /// FENCED_LEADER_EPOCH, ...); the window is dropped and read again.
    #[error("writing the share-partition state: {0}")]
    Persist(#[source] ShareCoordinatorError),
}

/// The owner's answer for one share-partition.
#[derive(Debug, Default)]
pub struct ShareOwnerRead {
    /// Why nothing was done (None: served).
    pub error: Option<ShareReadError>,
    /// Why the acknowledgements were refused (None: applied, or none).
    pub ack_error: Option<ShareAckError>,
    /// The batches holding the acquired records (RecordBatch bytes).
    pub records: Bytes,
    /// The acquired runs of offsets with their delivery counts.
    pub acquired: Vec<AcquiredRange>,
    /// The partition's append-signal generation when read (a long poll
    /// waits for a newer one).
    pub append_generation: u64,
    /// The shard's share-release generation when read (records made
    /// available again by a release or an expired lock).
    pub released_generation: u64,
}

impl ShareOwnerRead {
    fn failed(e: ShareReadError) -> ShareOwnerRead {
        ShareOwnerRead {
            error: Some(e),
            ..ShareOwnerRead::default()
        }
    }
}

/// Takes the owner shard of `reads` (all led there, or refused there);
/// runs each on it in order, one cross-shard call for all. Gives one
/// answer per read, or the mesh's error when the owner did not answer.
pub async fn share_on(
    shard: &Shard,
    owner: usize,
    reads: Vec<ShareRead>,
) -> Result<Vec<ShareOwnerRead>, ShardError> {
    shard
        .invoke_on(owner, move |s| async move {
            let mut out = Vec::with_capacity(reads.len());
            for r in &reads {
                out.push(share_one(&s, r).await);
            }
            out
        })
        .await
}

/// Runs on the owner: one share-partition's acknowledgements, release and
/// acquisition.
async fn share_one(shard: &Rc<Shard>, r: &ShareRead) -> ShareOwnerRead {
    let part = match shard.serving(&r.topic, r.partition, Requester::Client, None) {
        Ok(p) => p,
        Err(e) => {
            // Not (or no longer) the leader: its windows here are stale.
            shard
                .share_partitions
                .borrow_mut()
                .retain(|(_, id, p), _| !(*id == r.topic_id && *p == r.partition));
            return ShareOwnerRead::failed(e.into());
        }
    };
    let key: ShareKey = (r.group.clone(), r.topic_id, r.partition);
    if r.revalidate {
        let held = shard
            .share_partitions
            .borrow()
            .get(&key)
            .filter(|led| led.leader_epoch == part.leader_epoch())
            .map(|led| led.state_epoch);
        if let Some(state_epoch) = held {
            let leader_epoch = part.leader_epoch().max(0);
            if !super::share_persist::still_current(shard, &key, state_epoch, leader_epoch).await {
                shard.share_partitions.borrow_mut().remove(&key);
            }
        }
    }
    let mut out = ShareOwnerRead {
        append_generation: part.append_signal().generation(),
        ..ShareOwnerRead::default()
    };
    let stale = shard
        .share_partitions
        .borrow()
        .get(&key)
        .is_none_or(|led| led.leader_epoch != part.leader_epoch());
    if stale {
        match super::share_persist::load(shard, &part, &key, &r.settings).await {
            Ok(led) => {
                let mut map = shard.share_partitions.borrow_mut();
                let current = map
                    .get(&key)
                    .is_some_and(|l| l.leader_epoch == part.leader_epoch());
                if !current {
                    map.insert(key.clone(), led);
                }
            }
            Err(e) => {
                out.error = Some(ShareReadError::State(e));
                return out;
            }
        }
    }
    let now = now_ms();
    let released_before;
    let changed;
    let settings = r.settings.clone();
    {
        let mut map = shard.share_partitions.borrow_mut();
        let Some(led) = map.get_mut(&key) else {
            return out;
        };
        let sp = &mut led.window;
        sp.configure(settings.window.clone());
        let mut released = sp.expire(now);
        let mut moved = false;
        if sp.start_offset() < part.log_start_offset() {
            sp.reset(part.log_start_offset());
            moved = true;
        }
        let mut acked = false;
        if !r.acks.is_empty() {
            match acknowledged(sp, &r.member, &r.acks, now) {
                Ok((next, n)) => {
                    *sp = next;
                    released += n;
                    acked = true;
                }
                Err(e) => out.ack_error = Some(e),
            }
        }
        if r.release_member {
            released += sp.release_member(&r.member);
        }
        released_before = released;
        changed = moved || acked || released > 0;
    }
    if changed {
        // Persisted before the acknowledgement is answered, as Kafka does.
        if let Err(e) = super::share_persist::persist(shard, &key).await {
            if out.ack_error.is_none() && !r.acks.is_empty() {
                out.ack_error = Some(ShareAckError::Persist(e));
            }
        }
    }
    // ARCHIVING runs (KIP-1191) made by the acknowledgements and releases
    // above, or read back on load, go to the dead-letter writer once
    // persisted.
    let runs = shard
        .share_partitions
        .borrow_mut()
        .get_mut(&key)
        .map(|led| led.window.take_dead_letters())
        .unwrap_or_default();
    super::share_dlq::spawn(shard, &key, &r.topic, &settings.dead_letter, runs);
    if released_before > 0 {
        shard.share_released.notify_all();
    }
    out.released_generation = shard.share_released.generation();
    if !r.fetch {
        return out;
    }
    let from = match shard.share_partitions.borrow().get(&key) {
        Some(led) => led.window.fetch_offset(),
        None => return out,
    };
    let bound = if settings.read_committed {
        part.last_stable_offset()
    } else {
        part.high_watermark()
    };
    if from >= bound {
        return out;
    }
    let (bytes, aborted) =
        match read_batches(&part, from, r.max_bytes, settings.read_committed).await {
            Ok(b) => b,
            Err(e) => {
                out.error = Some(e);
                return out;
            }
        };
    let now = now_ms();
    let mut kept = BytesMut::new();
    let mut acquired: Vec<AcquiredRange> = Vec::new();
    let mut count = 0usize;
    {
        let mut map = shard.share_partitions.borrow_mut();
        let Some(sp) = map.get_mut(&key).map(|led| &mut led.window) else {
            return out;
        };
        let mut at = 0usize;
        let mut aborts = Aborts::new(aborted);
        while count < r.max_records {
            let Some(rest) = bytes.get(at..) else { break };
            let Ok(h) = BatchHeader::parse(rest) else {
                break;
            };
            let size = h.total_size();
            let Some(whole) = rest.get(..size) else { break };
            at += size;
            // Control batches (transaction markers) are acquired like
            // records, as Kafka 4.4 does; consumers acknowledge them as Gap.
            // Offsets past what the window may hold cannot be acquired.
            let cap = sp.start_offset() + settings.window.max_record_locks as i64;
            if aborts.is_aborted(&h) {
                sp.archive_aborted(h.base_offset, h.last_offset().min(cap));
                continue;
            }
            let offsets: Vec<i64> = (h.base_offset..=h.last_offset().min(cap)).collect();
            let runs = sp.acquire(&r.member, &offsets, usize::MAX, now);
            if runs.is_empty() {
                continue;
            }
            count += runs
                .iter()
                .map(|x| (x.last - x.first + 1) as usize)
                .sum::<usize>();
            kept.extend_from_slice(whole);
            acquired.extend(runs);
        }
    }
    if !acquired.is_empty() {
        arm_lock_timer(shard, key, r.topic.clone(), &settings);
    }
    out.records = kept.freeze();
    out.acquired = acquired;
    out
}

/// The window after `acks` of `member` (all or nothing) and how many
/// records they released.
fn acknowledged(
    sp: &SharePartition,
    member: &str,
    acks: &[AckBatch],
    now: i64,
) -> Result<(SharePartition, usize), ShareAckError> {
    let mut next = sp.clone();
    let mut released = 0;
    for b in acks {
        let bad = || ShareAckError::BadTypes {
            first: b.first,
            last: b.last,
            types: b.types.clone(),
        };
        let n = b.last - b.first + 1;
        let types: Vec<AckType> = b
            .types
            .iter()
            .map(|c| match AckType::from_code(*c) {
                // Renew (4) is ShareAcknowledge v2's; v1 is served.
                Some(AckType::Renew) | None => Err(bad()),
                Some(t) => Ok(t),
            })
            .collect::<Result<_, _>>()?;
        match types.as_slice() {
            [t] => {
                next.acknowledge(member, b.first, b.last, *t, now)?;
                released += usize::from(*t == AckType::Release) * n.max(0) as usize;
            }
            many if n > 0 && many.len() as i64 == n => {
                for (i, t) in many.iter().enumerate() {
                    let o = b.first + i as i64;
                    next.acknowledge(member, o, o, *t, now)?;
                    released += usize::from(*t == AckType::Release);
                }
            }
            _ => return Err(bad()),
        }
    }
    Ok((next, released))
}

/// Expires the locks of `key` (topic `topic`) once `after_ms` passed;
/// wakes long polls when records became available again, and hands the
/// records given up at the delivery-count limit to the dead-letter writer.
fn arm_lock_timer(
    shard: &Rc<Shard>,
    key: ShareKey,
    topic: Arc<str>,
    settings: &GroupShareSettings,
) {
    let me = shard.clone();
    let after_ms = settings.window.lock_duration_ms;
    let dead_letter = settings.dead_letter.clone();
    crate::shard::stall::spawn_local("share lock expiry", async move {
        glommio::timer::sleep(Duration::from_millis(after_ms.max(0) as u64 + 1)).await;
        let n = me
            .share_partitions
            .borrow_mut()
            .get_mut(&key)
            .map_or(0, |led| led.window.expire(now_ms()));
        if n > 0 {
            me.share_released.notify_all();
            // A failed write dropped the window; the next use reads it.
            if super::share_persist::persist(&me, &key).await.is_ok() {
                let runs = me
                    .share_partitions
                    .borrow_mut()
                    .get_mut(&key)
                    .map(|led| led.window.take_dead_letters())
                    .unwrap_or_default();
                super::share_dlq::spawn(&me, &key, &topic, &dead_letter, runs);
            }
        }
    })
    .detach();
}

/// The aborted transactions of a READ_COMMITTED read, walked in offset
/// order as a consumer does: a producer's data batches are aborted from
/// its aborted transaction's first offset until its next control batch.
struct Aborts {
    /// (producer id, first offset) not reached yet, by first offset.
    pending: std::collections::VecDeque<(i64, i64)>,
    /// Producers inside an aborted transaction at the current batch.
    open: std::collections::HashSet<i64>,
}

impl Aborts {
    fn new(mut aborted: Vec<(i64, i64)>) -> Aborts {
        aborted.sort_by_key(|(_, first)| *first);
        Aborts {
            pending: aborted.into(),
            open: Default::default(),
        }
    }

    /// Whether batch `h` (taken in offset order) holds aborted records.
    fn is_aborted(&mut self, h: &BatchHeader) -> bool {
        while let Some(&(pid, first)) = self.pending.front() {
            if first > h.last_offset() {
                break;
            }
            self.open.insert(pid);
            self.pending.pop_front();
        }
        if !h.is_transactional() {
            return false;
        }
        if h.is_control() {
            // The transaction's marker: what follows is another one.
            self.open.remove(&h.producer_id);
            return false;
        }
        self.open.contains(&h.producer_id)
    }
}

/// Reads whole batches of `part` from `from` below the high watermark
/// (below the last stable offset for `read_committed`, with the aborted
/// transactions overlapping the read),
/// at most `max_bytes` (the first batch even if larger): batch headers
/// without waiting for the disk (warmed on the blocking pool when not
/// cached), the bytes on the blocking pool.
pub(super) async fn read_batches(
    part: &Rc<Partition>,
    from: i64,
    max_bytes: u64,
    read_committed: bool,
) -> Result<(Bytes, Vec<(i64, i64)>), ShareReadError> {
    let isolation = if read_committed {
        crate::shard::partition::READ_COMMITTED
    } else {
        0
    };
    let mut tries = 0u32;
    loop {
        let mode = if tries < 3 {
            ReadMode::NoWait
        } else {
            ReadMode::Blocking
        };
        match part.read_isolated_in(from, max_bytes, true, isolation, mode) {
            Ok(iso) => {
                let aborted = iso.aborted.unwrap_or_default();
                let regions = iso.read.regions;
                if regions.is_empty() {
                    return Ok((Bytes::new(), aborted));
                }
                let bytes = glommio::executor()
                    .spawn_blocking(move || crate::shard::internal::read_regions(&regions))
                    .await?;
                return Ok((Bytes::from(bytes), aborted));
            }
            Err(StorageError::NotCached {
                file,
                position,
                len,
                ..
            }) => {
                tries += 1;
                if let Err(e) = cache::warm(file, position, len).await {
                    log::debug!("{}-{}: warming {position}: {e}", part.topic(), part.index());
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// What a long-polling ShareFetch waits on at one owner: its partitions'
/// (topic, partition, append generation seen) and the owner's
/// share-release generation seen.
#[derive(Debug, Clone)]
pub struct ShareWait {
    /// The owner shard.
    pub owner: usize,
    /// (topic, partition, append-signal generation when read).
    pub partitions: Vec<(Arc<str>, i32, u64)>,
    /// The owner's share-release generation when read.
    pub released_generation: u64,
}

/// Waits until any owner in `waits` gets an append to one of its
/// partitions or makes share records available again, or `remaining`
/// passes. One waiter per owner, raced; the others end when one fires.
pub async fn wait_for_records(shard: &Rc<Shard>, waits: Vec<ShareWait>, remaining: Duration) {
    let (tx, rx) = futures_channel::oneshot::channel::<()>();
    let tx = Rc::new(std::cell::RefCell::new(Some(tx)));
    let mut cancels = Vec::new();
    for w in waits {
        let me = shard.clone();
        let tx = tx.clone();
        let (cancel_tx, cancel_rx) = futures_channel::oneshot::channel::<()>();
        cancels.push(cancel_tx);
        crate::shard::stall::spawn_local("share fetch wait", async move {
            let _ = me
                .invoke_on(w.owner, move |s| async move {
                    let mut signals: Vec<_> = w
                        .partitions
                        .iter()
                        .filter_map(|(t, p, g)| {
                            s.partition(t, *p)
                                .map(|part| (part.append_signal().clone(), *g))
                        })
                        .collect();
                    signals.push((s.share_released.clone(), w.released_generation));
                    let cancelled = async {
                        let _ = cancel_rx.await;
                    };
                    futures_lite::future::or(
                        crate::shard::notify::any_changed(signals),
                        futures_lite::future::or(glommio::timer::sleep(remaining), cancelled),
                    )
                    .await;
                })
                .await;
            if let Some(tx) = tx.borrow_mut().take() {
                let _ = tx.send(());
            }
        })
        .detach();
    }
    futures_lite::future::or(
        async {
            let _ = rx.await;
        },
        glommio::timer::sleep(remaining),
    )
    .await;
    drop(cancels);
}
