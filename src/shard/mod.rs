//! Shards: one pinned glommio executor per core, each owning a disjoint set of
//! partitions. Work for a partition owned by another shard travels over the
//! glommio channel mesh as a boxed task with a reply channel
//! ([`Shard::invoke_on`]); local work runs inline. Nothing here takes a lock.

pub mod controller_call;
pub mod error;
pub mod fatal;
pub mod fault;
pub mod fetch_session;
pub mod flusher;
pub mod home;
mod hw_checkpoint;
mod image;
pub mod internal;
pub mod io;
pub mod isr_change;
pub mod listener;
pub mod notify;
mod opening;
pub mod owner;
pub mod partition;
pub mod remote;
pub mod removal;
pub mod share_store;
pub use crate::stall;
pub mod write_stats;

pub use controller_call::submit;
use notify::Notify;
pub use opening::opened_everywhere;

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use glommio::channels::channel_mesh::{Receivers, Senders};

use crate::cluster::leadership::{self, LeadershipError, Requester};
use crate::cluster::metadata::{owner_shard, MetadataImage};
use crate::cluster::quorum::Quorum;
use crate::config::Config;
use crate::mesh::ShardError;
use partition::Partition;

/// A unit of work sent to another shard: runs there, replies through the
/// channel it captured. `Send` because it crosses threads; the future it
/// builds is shard-local.
pub type Task = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()>>> + Send>;

/// Wall-clock time in ms since the Unix epoch (0 if the clock is before it):
/// append timestamps, retention, timers' bookkeeping.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Topic name + partition index.
pub type TopicPartition = (Arc<str>, i32);

/// Partitions of one shard: topic → partition index → partition.
type PartitionMap = HashMap<Arc<str>, HashMap<i32, Rc<Partition>>>;

/// The state of one shard. Reached from tasks with [`current`].
pub struct Shard {
    /// This shard's index (its place in the channel mesh), 0..shards.
    pub id: usize,
    /// Number of shards.
    pub shards: usize,
    /// Broker configuration.
    pub config: Arc<Config>,
    /// The listeners' security and how this broker authenticates to
    /// others (built at start from the configuration).
    pub security: Arc<crate::security::Security>,
    /// The latest metadata image this shard applied.
    metadata: RefCell<Arc<MetadataImage>>,
    /// Bumped after each newer image is applied (the replica fetchers
    /// follow leadership with it).
    metadata_applied: Rc<Notify>,
    /// Partitions this shard owns.
    /// Keyed by topic, then partition index, so lookups by `&str` allocate nothing.
    partitions: RefCell<PartitionMap>,
    /// The layers above told of leadership changes (the group and
    /// transaction coordinators; `listener.rs`).
    leadership_listeners: RefCell<Vec<Rc<dyn listener::LeadershipListener>>>,
    /// The metadata quorum's member of this node (shard 0 only, once started).
    quorum: RefCell<Option<Rc<Quorum>>>,
    /// The way to other brokers (installed at start-up).
    remote: RefCell<Option<Rc<dyn remote::RemoteBrokers>>>,
    /// The way to the transaction coordinator for Produce's KIP-890 check
    /// (installed at start-up).
    txn_verifier: RefCell<Option<Rc<dyn owner::produce::TxnVerifier>>>,
    share_store: RefCell<Option<Rc<dyn share_store::ShareStateStore>>>,
    /// This broker's block of producer ids (shard 0): next, end (exclusive).
    producer_ids: std::cell::Cell<(i64, i64)>,
    /// The fetch sessions (KIP-227) of the connections on this shard.
    pub fetch_sessions: RefCell<fetch_session::FetchSessionCache>,
    /// The share sessions (KIP-932) whose (group, member) hash to this
    /// shard (`handlers::share_fetch`).
    pub share_sessions: RefCell<crate::share::session::ShareSessionCache>,
    /// The share sessions each connection on this shard opened, by
    /// connection (`handlers::share_fetch::connection_closed`).
    pub share_connections: RefCell<HashMap<String, Vec<ShareMember>>>,
    /// The share-partitions of the partitions this shard leads
    /// (`owner::share`), in memory until the share coordinator persists them.
    share_partitions: RefCell<HashMap<owner::share::ShareKey, owner::share::LedShare>>,
    /// Bumped when records of a share-partition here become available
    /// again (a release, an expired lock): long-polling ShareFetches wake.
    share_released: Rc<Notify>,
    /// High watermarks read from the checkpoints at start-up, taken by
    /// each partition as it opens (`hw_checkpoint.rs`).
    hw_restore: RefCell<HashMap<(String, i32), i64>>,
    /// What the last high-watermark checkpoint of this shard wrote.
    hw_written: RefCell<Option<crate::storage::checkpoint::OffsetCheckpoint>>,
    /// Directories an image named for another topic id than the one they
    /// hold (logged once each; `opening.rs`).
    held_back: RefCell<std::collections::HashSet<(Arc<str>, i32, uuid::Uuid)>>,
    /// The partitions being opened off the reactor (`opening.rs`).
    opens: opening::Opens,
    senders: Senders<Task>,
}

/// A share session's (group id, member id).
pub type ShareMember = (Arc<str>, Arc<str>);

thread_local! {
    static CURRENT: RefCell<Option<Rc<Shard>>> = const { RefCell::new(None) };
}

/// The shard running on this thread. Errors when called off a shard thread.
pub fn current() -> Result<Rc<Shard>, ShardError> {
    CURRENT
        .with(|c| c.borrow().clone())
        .ok_or(ShardError::Unavailable(usize::MAX))
}

impl Shard {
    /// Creates the shard, registers it as this thread's current shard and
    /// spawns the loops that run tasks sent by other shards.
    pub fn install(
        config: Arc<Config>,
        security: Arc<crate::security::Security>,
        image: Arc<MetadataImage>,
        senders: Senders<Task>,
        receivers: Receivers<Task>,
    ) -> Rc<Shard> {
        let id = senders.peer_id();
        let shards = senders.nr_consumers();
        let fetch_sessions = fetch_session::FetchSessionCache::new(
            id,
            shards,
            fetch_session::slots_per_shard(
                config.max_incremental_fetch_session_cache_slots,
                shards,
            ),
            // Session ids need only be unique: start from the clock so that
            // a restarted broker does not hand out the ids it had before.
            (now_ms() as u32) >> 3,
        );
        let hw_restore = crate::storage::checkpoint::read_hw_checkpoints(&config.data_dir());
        // `group.share.max.share.sessions`, split over the shards.
        let share_sessions_per_shard =
            usize::try_from(config.group.share_max_share_sessions.max(1))
                .unwrap_or(1)
                .div_ceil(shards.max(1));
        let shard = Rc::new(Shard {
            id,
            shards,
            config,
            security,
            // Start from the empty image (offset 0, version 0): every
            // published image is newer and opens what this shard owns.
            metadata: RefCell::new(Arc::new(MetadataImage {
                version: 0,
                topics: Default::default(),
                topic_ids: Default::default(),
                ..(*image).clone()
            })),
            metadata_applied: Rc::new(Notify::default()),
            partitions: RefCell::new(HashMap::new()),
            leadership_listeners: RefCell::new(Vec::new()),
            quorum: RefCell::new(None),
            remote: RefCell::new(None),
            txn_verifier: RefCell::new(None),
            share_store: RefCell::new(None),
            producer_ids: std::cell::Cell::new((0, 0)),
            fetch_sessions: RefCell::new(fetch_sessions),
            share_sessions: RefCell::new(crate::share::session::ShareSessionCache::new(
                share_sessions_per_shard,
            )),
            share_connections: RefCell::new(HashMap::new()),
            share_partitions: RefCell::new(HashMap::new()),
            share_released: Rc::new(Notify::default()),
            hw_restore: RefCell::new(hw_restore),
            hw_written: RefCell::new(None),
            held_back: RefCell::new(Default::default()),
            opens: Default::default(),
            senders,
        });
        CURRENT.with(|c| *c.borrow_mut() = Some(shard.clone()));
        home::install();
        let mut receivers = receivers;
        for (_peer, rx) in receivers.streams() {
            stall::spawn_local("mesh receiver", async move {
                while let Some(task) = rx.recv().await {
                    // A panicking task drops its reply channel (the caller
                    // answers REQUEST_TIMED_OUT) and leaves the shard running.
                    let fut = std::panic::AssertUnwindSafe(task());
                    // Not `stall::spawn_local`: the task is already wrapped
                    // (by `invoke_on`, with the sender's activity).
                    glommio::spawn_local(async move {
                        if futures_lite::FutureExt::catch_unwind(fut).await.is_err() {
                            log::error!(
                                "a cross-shard task panicked (a bug; see the panic message above)"
                            );
                        }
                    })
                    .detach();
                }
            })
            .detach();
        }
        shard
    }

    /// Runs `f` on shard `target` and returns its result. Local work runs
    /// inline; remote work is boxed, sent over the mesh, and answered through
    /// a [`home::Reply`] (delivered on this shard's thread). Errors with
    /// [`ShardError::Unavailable`] when the target shard is gone.
    pub async fn invoke_on<R, F, Fut>(&self, target: usize, f: F) -> Result<R, ShardError>
    where
        R: Send + 'static,
        F: FnOnce(Rc<Shard>) -> Fut + Send + 'static,
        Fut: Future<Output = R> + 'static,
    {
        if target == self.id {
            return Ok(f(current()?).await);
        }
        // Answered on `target`, delivered on this shard (`home`).
        let (tx, rx) = home::reply_channel();
        stall::count_cross_shard_call();
        let activity = stall::current_activity();
        let task: Task = Box::new(move || {
            Box::pin(stall::watch_as("cross-shard task", activity, async move {
                if let Ok(shard) = current() {
                    tx.send(f(shard).await);
                }
            }))
        });
        self.senders
            .send_to(target, task)
            .await
            .map_err(|_| ShardError::Unavailable(target))?;
        rx.await.map_err(|_| ShardError::Unavailable(target))
    }

    /// The metadata quorum's member (shard 0, once started).
    pub fn quorum(&self) -> Option<Rc<Quorum>> {
        self.quorum.borrow().clone()
    }

    /// Installs the quorum member (shard 0, at start-up).
    pub fn set_quorum(&self, q: Rc<Quorum>) {
        self.quorum.replace(Some(q));
    }

    /// The next id of this broker's producer id block, if any is left.
    pub fn take_producer_id(&self) -> Option<i64> {
        let (next, end) = self.producer_ids.get();
        (next < end).then(|| {
            self.producer_ids.set((next + 1, end));
            next
        })
    }

    /// Installs the way to other brokers.
    pub fn set_remote(&self, r: Rc<dyn remote::RemoteBrokers>) {
        self.remote.replace(Some(r));
    }

    /// The way to other brokers, once installed.
    pub fn remote(&self) -> Option<Rc<dyn remote::RemoteBrokers>> {
        self.remote.borrow().clone()
    }

    /// Installs the way to the share coordinator (start-up).
    pub fn set_share_store(&self, v: Rc<dyn share_store::ShareStateStore>) {
        self.share_store.replace(Some(v));
    }

    /// The way to the share coordinator, once installed.
    pub fn share_store(&self) -> Option<Rc<dyn share_store::ShareStateStore>> {
        self.share_store.borrow().clone()
    }

    /// Installs the way to the transaction coordinator (start-up).
    pub fn set_txn_verifier(&self, v: Rc<dyn owner::produce::TxnVerifier>) {
        self.txn_verifier.replace(Some(v));
    }

    /// The way to the transaction coordinator, once installed.
    pub fn txn_verifier(&self) -> Option<Rc<dyn owner::produce::TxnVerifier>> {
        self.txn_verifier.borrow().clone()
    }

    /// A new producer id block `[first, end)`.
    pub fn set_producer_ids(&self, first: i64, end: i64) {
        self.producer_ids.set((first, end));
    }

    /// The owner shard of a partition.
    pub fn owner(&self, topic: &str, partition: i32) -> usize {
        owner_shard(topic, partition, self.shards)
    }

    /// The metadata image this shard last applied.
    pub fn metadata(&self) -> Arc<MetadataImage> {
        self.metadata.borrow().clone()
    }

    /// Gives the signal bumped after each newer image is applied.
    pub fn metadata_applied(&self) -> &Rc<Notify> {
        &self.metadata_applied
    }

    /// A partition owned by this shard.
    pub fn partition(&self, topic: &str, partition: i32) -> Option<Rc<Partition>> {
        self.partitions
            .borrow()
            .get(topic)
            .and_then(|m| m.get(&partition))
            .cloned()
    }

    /// The partition `topic`-`partition` if this broker may serve it to
    /// `requester` with the request's `current_leader_epoch` (None: not
    /// checked): the one "may this request use this partition" decision
    /// of the data-path handlers, run on the owner shard
    /// (`cluster::leadership::check` on this shard's image and the
    /// partition's replica state). Errors with why not
    /// (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER — also while the
    /// partition's log is being opened —, KAFKA_STORAGE_ERROR,
    /// FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH).
    pub fn serving(
        &self,
        topic: &str,
        partition: i32,
        requester: Requester,
        current_leader_epoch: Option<i32>,
    ) -> Result<Rc<Partition>, LeadershipError> {
        let part = self.partition(topic, partition);
        if part.is_none() && self.is_opening(topic, partition) {
            return Err(leadership::check_opening(
                &self.metadata(),
                self.config.node_id,
                topic,
                partition,
            ));
        }
        leadership::check(
            &self.metadata(),
            self.config.node_id,
            topic,
            partition,
            part.as_ref().map(|p| p.replica_state()),
            requester,
            current_leader_epoch,
        )?;
        part.ok_or(LeadershipError::UnknownTopicOrPartition)
    }

    fn partition_dir(&self, topic: &str, partition: i32) -> PathBuf {
        self.config.data_dir().join(format!("{topic}-{partition}"))
    }

    /// Sends `image` to every shard (this one inline) and waits until all
    /// applied it. Used by the controller after a topic change.
    pub async fn publish_metadata(&self, image: Arc<MetadataImage>) -> Result<(), ShardError> {
        let node = self.config.node_id;
        let settled = self.quorum().is_some_and(|q| {
            image
                .registrations
                .get(&node)
                .is_some_and(|b| b.incarnation_id == q.incarnation())
        });
        let mut waits = Vec::new();
        for target in 0..self.shards {
            let img = image.clone();
            let me = current()?;
            waits.push(stall::spawn_local("publish metadata", async move {
                me.invoke_on(target, move |s| async move {
                    if let Err(e) = s.apply_metadata_settled(img, settled) {
                        log::error!("shard {} failed to apply metadata: {e}", s.id);
                    }
                })
                .await
            }));
        }
        for w in waits {
            w.await?;
        }
        Ok(())
    }

    /// Every partition this shard owns.
    pub fn owned_partitions(&self) -> Vec<Rc<Partition>> {
        self.partitions
            .borrow()
            .values()
            .flat_map(|m| m.values().cloned())
            .collect()
    }

    /// Runs `pass` on this shard `initial` after start-up, then every
    /// `every`, while the shard lives. Kafka's log manager schedules its
    /// periodic tasks this way (first run after `log.initial.task.delay.ms`),
    /// so a broker restarted more often than the interval still runs them.
    /// `label` names the task in stall reports.
    fn start_periodic<F, Fut>(
        self: &Rc<Self>,
        label: &'static str,
        initial: Duration,
        every: Duration,
        pass: F,
    ) where
        F: Fn(Rc<Shard>) -> Fut + 'static,
        Fut: std::future::Future<Output = ()> + 'static,
    {
        let me = Rc::downgrade(self);
        stall::spawn_local(label, async move {
            glommio::timer::sleep(initial).await;
            loop {
                let Some(shard) = me.upgrade() else { break };
                pass(shard).await;
                glommio::timer::sleep(every).await;
            }
        })
        .detach();
    }

    /// `log.initial.task.delay.ms`: when the first retention, cleaner and
    /// producer-expiration passes run after start-up.
    fn initial_task_delay(&self) -> Duration {
        Duration::from_millis(self.config.log_initial_task_delay_ms)
    }

    /// Starts the retention timer: `log.initial.task.delay.ms` after
    /// start-up, then every `log.retention.check.interval.ms`, each owned
    /// partition applies its retention settings.
    pub fn start_retention(self: &Rc<Self>) {
        let every = Duration::from_millis(self.config.log_retention_check_interval_ms.max(1));
        self.start_periodic(
            "retention",
            self.initial_task_delay(),
            every,
            |shard| async move {
                let now = now_ms();
                for p in shard.owned_partitions() {
                    if let Err(e) = p.apply_retention(now).await {
                        log::warn!("retention on {}-{} failed: {e}", p.topic(), p.index());
                    }
                }
            },
        );
    }

    /// Starts the producer-id expiration timer: `log.initial.task.delay.ms`
    /// after start-up, then every `producer.id.expiration.check.interval.ms`,
    /// each owned partition forgets the idempotent producers idle for
    /// longer than `producer.id.expiration.ms`.
    pub fn start_producer_expiration(self: &Rc<Self>) {
        let every =
            Duration::from_millis(self.config.producer_id_expiration_check_interval_ms.max(1));
        self.start_periodic(
            "producer expiration",
            self.initial_task_delay(),
            every,
            |shard| async move {
                let (now, after) = (now_ms(), shard.config.producer_id_expiration_ms);
                for p in shard.owned_partitions() {
                    p.expire_producers(now, after);
                }
            },
        );
    }

    /// Starts the log cleaner: `log.initial.task.delay.ms` after start-up,
    /// then every `log.cleaner.backoff.ms`, each owned partition with
    /// `cleanup.policy=compact` gets a compaction pass, up to 4 segment
    /// rewrites at a time with a yield in between so produce and fetch on
    /// this shard keep running.
    pub fn start_cleaner(self: &Rc<Self>) {
        let every = Duration::from_millis(self.config.log_cleaner_backoff_ms.max(1));
        self.start_periodic(
            "cleaner",
            self.initial_task_delay(),
            every,
            |shard| async move {
                for p in shard.owned_partitions() {
                    loop {
                        let now = now_ms();
                        match p.compact(now, 4).await {
                            Ok(s) if s.segments > 0 => glommio::yield_if_needed().await,
                            Ok(_) => break,
                            Err(e) => {
                                log::warn!("compaction of {}-{} failed: {e}", p.topic(), p.index());
                                break;
                            }
                        }
                    }
                    glommio::yield_if_needed().await;
                }
            },
        );
    }

    /// Closes every partition log cleanly (flush, indexes, clean-shutdown
    /// marker). Called once at shutdown.
    pub fn close_all(&self) {
        // Let the I/O thread finish every queued write (data and index
        // entries) before the files are flushed and marked clean.
        let _ = io::with_io(|io| {
            use std::sync::atomic::Ordering::Relaxed;
            let st = io.stats();
            log::info!(
                "shard {}: I/O thread wrote {} bytes in {} appends with {} pwritev calls; {} other jobs; \
                 {} appends ({} bytes) written inline with RWF_NOWAIT, {} cut short, \
                 {} queued at the poll budget, {} slow in the kernel",
                self.id,
                st.bytes.load(Relaxed),
                st.writes.load(Relaxed),
                st.write_calls.load(Relaxed),
                st.calls.load(Relaxed),
                st.inline_writes.load(Relaxed),
                st.inline_bytes.load(Relaxed),
                st.inline_fallbacks.load(Relaxed),
                st.inline_deferred.load(Relaxed),
                st.inline_slow.load(Relaxed)
            );
        });
        // A blocking wait (the shard is stopping): an awaited answer would
        // come through this shard's home queue, which no longer runs here.
        match io::IoMark::queue() {
            Ok(mark) => mark.wait(),
            Err(e) => log::warn!("I/O thread: {e}"),
        }
        let parts: Vec<Rc<Partition>> = self
            .partitions
            .borrow_mut()
            .drain()
            .flat_map(|(_, m)| m.into_values())
            .collect();
        let mut high_watermarks = crate::storage::checkpoint::OffsetCheckpoint::new();
        for p in parts {
            if let Err(e) = p.write_snapshot() {
                log::warn!(
                    "{}-{}: cannot write the producer-state snapshot: {e}",
                    p.topic(),
                    p.index()
                );
            }
            high_watermarks.insert((p.topic().to_string(), p.index()), p.high_watermark());
            // Closed in place: a replica fetcher or a waiting request may
            // still hold the partition; it takes no append after this.
            if let Err(e) = p.close() {
                log::warn!("{}-{}: close failed: {e}", p.topic(), p.index());
                if let Err(e) = p.flush_log() {
                    log::warn!("flush failed: {e}");
                }
            }
        }
        self.write_hw_checkpoint_at_close(&high_watermarks);
    }
}
