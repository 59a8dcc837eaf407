//! One partition as its owner shard holds it: the log, the append signal that
//! wakes long-poll fetches, the flush policy with group commit, and the
//! producer and transaction state (KIP-98: LSO, aborted transactions,
//! markers).
//!
//! This is the partition's one owner API: its fields are private and
//! handlers use its methods. `produce` (the Produce checks up to stage 1)
//! lives in `partition/produce.rs`, the topic rules it applies in
//! `partition/produce_rules.rs`; the read side (Fetch reads, ListOffsets
//! offsets, DescribeProducers, accessors) in `partition/read.rs`;
//! truncation and the leader-epoch lookups in `partition/truncate.rs`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fs::File;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use futures_channel::oneshot;
use kafka_protocol::records::{Record, TimestampType as RecordTsType};
use uuid::Uuid;

use super::error::{FlushError, InternalAppendError, MarkerError};
use super::fault;
use super::notify::Notify;
use crate::cluster::topic_config::TopicSettings;
use crate::producer_state::partition_txns::{AbortedTxn, PartitionTxns};
use crate::producer_state::snapshot;
use crate::producer_state::{ProducerStateError, ProducerStateMap};
use crate::storage::cleaner::{CleanStats, CompactionConfig};
use crate::storage::log::{AppendTicket, PendingWrite};
use crate::storage::records::control_marker;
use crate::storage::txn_index::{control_key, control_value, ControlMarker};
use crate::storage::{
    AppendResult, BatchHeader, Inconsistency, PartitionLog, StorageError, ValidatedBatch,
};

mod file_work;
mod flush;
mod produce;
pub(crate) mod produce_rules;
mod read;
mod rebuild;
mod replication;
mod retention;
mod truncate;

pub use produce::ProduceOutcome;
pub use read::{IsolatedRead, ProducerSummary};
pub(crate) use rebuild::rebuild_state;
pub use rebuild::Rebuilt;
use rebuild::{apply_batch, write_snapshot_files};
pub use replication::{FollowerState, IsrChange, Replication};

/// Fetch `isolation_level` 1 (KIP-98): only data below the LSO is returned.
pub const READ_COMMITTED: i8 = 1;

/// Someone waiting until every offset below `.0` is durable.
type FlushWaiter = (i64, oneshot::Sender<Result<(), FlushError>>);

/// An append reserved on a partition (stage 1 done), waiting for its write
/// and commit: [`Appending::finish`].
pub struct Appending {
    part: Rc<Partition>,
    seq: u64,
    /// The write, when not yet submitted.
    write: Option<PendingWrite>,
    /// The submitted write.
    in_flight: Option<WriteFuture>,
    /// The write's outcome, not yet reported to the partition.
    outcome: Option<std::io::Result<()>>,
    /// The outcome was reported ([`Partition::written`]).
    reported: bool,
    reply: oneshot::Receiver<Result<(AppendResult, bool), StorageError>>,
}

impl Appending {
    /// Stages 2 and 3: writes the batches on the shard's I/O thread (the
    /// reactor goes on serving meanwhile), then commits them in reservation
    /// order (the LEO and high watermark move, indexes grow, waiting fetches
    /// wake). Gives the append's result and whether the flush policy requires
    /// an fdatasync before acks=all may be answered (then call
    /// [`Partition::wait_flushed`] with `last_offset + 1`). Errors: `Io` when
    /// this write or an earlier one of the partition failed
    /// (KAFKA_STORAGE_ERROR). Dropping it unfinished (a closed connection)
    /// still completes the write and the commit in the background, so later
    /// appends of the partition are never held up.
    pub async fn finish(mut self) -> Result<(AppendResult, bool), StorageError> {
        if self.write.is_some() {
            fault::pause(fault::Stage::Reserved, &self.part).await;
            if let Some(w) = self.write.take() {
                self.in_flight = Some(Box::pin(super::io::write(w.file, w.at, w.parts)));
            }
        }
        let outcome = match self.in_flight.as_mut() {
            Some(f) => f.await,
            None => Ok(()),
        };
        self.in_flight = None;
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        if ok {
            fault::pause(fault::Stage::Written, &self.part).await;
        }
        if let Some(outcome) = self.outcome.take() {
            self.reported = true;
            self.part.written(self.seq, outcome);
        }
        let r = (&mut self.reply).await.unwrap_or_else(|_| {
            Err(StorageError::Inconsistent {
                path: None,
                what: Inconsistency::AppendAbandoned,
            })
        });
        if r.is_ok() {
            fault::pause(fault::Stage::Committed, &self.part).await;
        }
        r
    }
}

impl Drop for Appending {
    fn drop(&mut self) {
        if self.reported {
            return;
        }
        let (part, seq) = (self.part.clone(), self.seq);
        let (write, in_flight, outcome) = (
            self.write.take(),
            self.in_flight.take(),
            self.outcome.take(),
        );
        super::stall::spawn_local("append completion", async move {
            let outcome = match (outcome, write, in_flight) {
                (Some(o), _, _) => o,
                (None, Some(w), _) => super::io::write(w.file, w.at, w.parts).await,
                (None, None, Some(f)) => f.await,
                (None, None, None) => Ok(()),
            };
            part.written(seq, outcome);
        })
        .detach();
    }
}

type WriteFuture = std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<()>>>>;

/// A reserved append not yet committed.
struct PendingCommit {
    seq: u64,
    ticket: AppendTicket,
    /// The write's outcome; None while it is in flight.
    written: Option<Result<(), std::io::Error>>,
    reply: Option<oneshot::Sender<Result<(AppendResult, bool), StorageError>>>,
}

/// A partition owned by this shard. Only this shard touches it, so plain
/// `RefCell`/`Cell` suffice; no borrow is held across an `.await`.
pub struct Partition {
    /// Topic name.
    topic: Arc<str>,
    /// Partition index.
    index: i32,
    /// Topic id (KIP-516).
    topic_id: Uuid,
    /// The partition's leader epoch (from the metadata image), written into
    /// the batches this replica appends as leader.
    leader_epoch: Cell<i32>,
    /// Whether this broker leads the partition (from the metadata image).
    is_leader: Cell<bool>,
    /// The log.
    log: RefCell<PartitionLog>,
    /// Bumped after every append (wakes fetches waiting for data).
    appended: Rc<Notify>,
    settings: RefCell<TopicSettings>,
    /// Idempotent producers' sequence state (KIP-98).
    producers: RefCell<ProducerStateMap>,
    /// Ongoing and aborted transactions (KIP-98), giving the LSO.
    txns: RefCell<PartitionTxns>,
    unflushed_messages: Cell<u64>,
    /// Every offset below this is on stable storage (fdatasync done).
    flushed_offset: Cell<i64>,
    /// The highest LEO a posted flush covers (`partition/flush.rs`).
    flush_posted: Cell<i64>,
    /// Posted flushes not yet applied, in posting order.
    flushes_posted: RefCell<VecDeque<flush::PostedFlush>>,
    /// Set by the first failed flush: no later one moves `flushed_offset`,
    /// and every waiter gets this error (KAFKA_STORAGE_ERROR).
    flush_failed: Cell<Option<FlushError>>,
    flush_timer_armed: Cell<bool>,
    flush_waiters: RefCell<Vec<FlushWaiter>>,
    /// `.log` files with committed bytes not yet covered by an fdatasync.
    unflushed_files: RefCell<Vec<Arc<File>>>,
    /// A roll renamed a segment's files since the last flush began: the
    /// next flush fsyncs the directory too (see `file_work`). Set once the
    /// I/O thread ran the renames, not when they were queued.
    dir_sync_due: Cell<bool>,
    /// Batches of file work with a roll's renames queued on the I/O thread
    /// and not yet run: no flush is posted meanwhile (its directory fsync
    /// could run before the renames), see `flush_deferred`.
    renames_pending: Cell<u32>,
    /// A flush was due while renames were pending: it is posted once they
    /// ran, with the directory's fsync.
    flush_deferred: Cell<bool>,
    /// Reserved appends not yet committed, in offset order.
    pending: RefCell<VecDeque<PendingCommit>>,
    next_seq: Cell<u64>,
    /// A compaction pass is running on its thread.
    compacting: Cell<bool>,
    /// Bumped when a compaction pass ends.
    compaction_done: Rc<Notify>,
    /// Replicas, ISR, followers' state (see `replication`).
    replication: RefCell<Replication>,
    /// Bumped by every truncation (`partition/truncate.rs`).
    truncations: Cell<u64>,
    /// Set on the I/O thread when critical file work of the log failed
    /// (`partition/file_work.rs`): later writes are not committed.
    file_failed: Arc<std::sync::atomic::AtomicBool>,
    /// Bumped when a segment prepared ahead of a roll was installed (or its
    /// preparation failed).
    segment_prepared: Rc<Notify>,
    /// Taken out of this broker by an image; its directory is being deleted.
    retired: Cell<bool>,
}

impl Partition {
    /// Wraps an opened log, rebuilding its producer and transaction state
    /// on the calling thread (tests and tools; a shard opens partitions
    /// off its reactor with [`Rebuilt::open`] and [`Self::from_rebuilt`]).
    pub fn new(
        topic: Arc<str>,
        index: i32,
        topic_id: Uuid,
        log: PartitionLog,
        settings: TopicSettings,
    ) -> Partition {
        let rebuilt = Rebuilt::from_log(&topic, index, log);
        Partition::from_rebuilt(topic, index, topic_id, rebuilt, settings)
    }

    /// Takes a log opened with its producer and transaction state
    /// ([`Rebuilt`]); gives the partition (no file work: cheap on the
    /// shard). Its log runs its file work at once until
    /// [`Self::defer_file_work`].
    pub fn from_rebuilt(
        topic: Arc<str>,
        index: i32,
        topic_id: Uuid,
        rebuilt: Rebuilt,
        settings: TopicSettings,
    ) -> Partition {
        let Rebuilt {
            log,
            producers,
            txns,
        } = rebuilt;
        let leo = log.log_end_offset();
        Partition {
            topic,
            index,
            topic_id,
            leader_epoch: Cell::new(0),
            is_leader: Cell::new(true),
            log: RefCell::new(log),
            appended: Rc::new(Notify::default()),
            settings: RefCell::new(settings),
            producers: RefCell::new(producers),
            txns: RefCell::new(txns),
            unflushed_messages: Cell::new(0),
            flushed_offset: Cell::new(leo),
            flush_posted: Cell::new(leo),
            flushes_posted: RefCell::new(VecDeque::new()),
            flush_failed: Cell::new(None),
            flush_timer_armed: Cell::new(false),
            flush_waiters: RefCell::new(Vec::new()),
            unflushed_files: RefCell::new(Vec::new()),
            dir_sync_due: Cell::new(false),
            renames_pending: Cell::new(0),
            flush_deferred: Cell::new(false),
            pending: RefCell::new(VecDeque::new()),
            next_seq: Cell::new(0),
            compacting: Cell::new(false),
            compaction_done: Rc::new(Notify::default()),
            replication: RefCell::new(Replication::default()),
            truncations: Cell::new(0),
            file_failed: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            segment_prepared: Rc::new(Notify::default()),
            retired: Cell::new(false),
        }
    }

    /// Takes a producer id and epoch; records that the transaction
    /// coordinator is being asked to confirm this partition for them (see
    /// [`Self::take_txn_verification`]).
    pub fn begin_txn_verification(&self, producer_id: i64, epoch: i16) {
        self.txns
            .borrow_mut()
            .begin_verification(producer_id, epoch);
    }

    /// Takes a producer id and epoch; gives true (and forgets it) when the
    /// verification begun by [`Self::begin_txn_verification`] still holds,
    /// false when a marker of the producer was written meanwhile.
    pub fn take_txn_verification(&self, producer_id: i64, epoch: i16) -> bool {
        self.txns.borrow_mut().take_verification(producer_id, epoch)
    }

    /// Flushes the log's files to stable storage (shutdown while the
    /// partition is still shared). Errors with the I/O failure.
    pub fn flush_log(&self) -> Result<(), StorageError> {
        self.log.borrow_mut().flush()
    }

    /// Closes the partition's log (clean shutdown: `.clean_shutdown` is
    /// written), also while other tasks (a replica fetcher) still hold the
    /// partition; it takes no append after. Errors with the I/O failure, or
    /// `Io` when appends are still in flight.
    pub fn close(&self) -> Result<(), StorageError> {
        self.log.borrow_mut().close()
    }

    /// The partition's effective settings.
    pub fn settings(&self) -> TopicSettings {
        self.settings.borrow().clone()
    }

    /// Replaces the settings (topic config change); a leader whose
    /// `min.insync.replicas` dropped to its ISR size moves its high
    /// watermark again.
    pub fn set_settings(&self, s: TopicSettings) {
        self.log.borrow_mut().set_config(s.log.clone());
        *self.settings.borrow_mut() = s;
        self.maybe_advance_high_watermark();
    }

    /// True when a flush policy (`flush.messages` / `flush.ms`) is configured.
    pub fn has_flush_policy(&self) -> bool {
        let s = self.settings.borrow();
        s.flush_messages.is_some() || s.flush_ms.is_some()
    }

    /// Stage 1 of an append (see `storage::PartitionLog::reserve`): takes
    /// the request's records bytes, the validated batches in them and the
    /// broker time `now_ms` (ms); assigns offsets, updates the producer and
    /// transaction state (a control batch ends its producer's transaction;
    /// an ABORT marker adds an entry to the `.txnindex` of the segment
    /// holding it) and gives the [`Appending`] whose
    /// [`Appending::finish`] writes the batches on the shard's I/O thread
    /// and commits them. Synchronous and cheap, so the order of calls is the
    /// order of offsets: call it for every partition of a request, then
    /// await the finishes. A failed `.txnindex` write only logs (the file is
    /// rebuilt at start-up). Errors: `Batch` (the batches do not match the
    /// bytes), `Io` after an earlier write failed (KAFKA_STORAGE_ERROR).
    pub fn append(
        self: &Rc<Self>,
        records: &bytes::Bytes,
        batches: &[ValidatedBatch],
        now_ms: i64,
    ) -> Result<Appending, StorageError> {
        self.append_as(records, batches, now_ms, false)
    }

    /// A follower's [`Partition::append`]: the batches fetched from the
    /// leader keep their offsets, leader epochs and CRCs
    /// (`PartitionLog::reserve_replica`; out of step with the LEO →
    /// `Inconsistent`), and update the producer and transaction state the
    /// same way, so this replica can lead with them.
    pub fn append_replica(
        self: &Rc<Self>,
        records: &bytes::Bytes,
        batches: &[ValidatedBatch],
        now_ms: i64,
    ) -> Result<Appending, StorageError> {
        self.append_as(records, batches, now_ms, true)
    }

    fn append_as(
        self: &Rc<Self>,
        records: &bytes::Bytes,
        batches: &[ValidatedBatch],
        now_ms: i64,
        replica: bool,
    ) -> Result<Appending, StorageError> {
        self.refuse_if_retired()?;
        let mut log = self.log.borrow_mut();
        let before = log.active_base_offset();
        let (write, ticket) = if replica {
            log.reserve_replica(records, batches, now_ms)?
        } else {
            log.reserve(records, batches, self.leader_epoch.get(), now_ms)?
        };
        let rolled = before != log.active_base_offset();
        let mut producers = self.producers.borrow_mut();
        let mut txns = self.txns.borrow_mut();
        // Kafka takes the roll's snapshot at the new segment's base
        // offset, with the state of the batches below it.
        let roll_base = rolled.then(|| log.active_base_offset());
        let mut roll_snapshot = None;
        let mut first = ticket.result.base_offset;
        for b in batches {
            if roll_base == Some(first) && roll_snapshot.is_none() {
                roll_snapshot = Some((first, snapshot::capture(&producers, &txns)));
            }
            let marker = if b.header.is_control() {
                records
                    .get(b.position..b.position.saturating_add(b.size))
                    .and_then(control_marker)
            } else {
                None
            };
            let aborted = apply_batch(&mut producers, &mut txns, &b.header, first, marker);
            if let Some(a) = aborted {
                // Queued file work on a shard (it lands before the marker's
                // write); made at once otherwise.
                if let Err(e) = log.append_txn_index(&a) {
                    log::error!("{}-{}: .txnindex write failed: {e}", self.topic, self.index);
                }
            }
            first += b.header.last_offset_delta as i64 + 1;
        }
        drop((producers, txns, log));
        // The log's file work of this reservation (a roll's, a new epoch's
        // checkpoint, `.txnindex` entries) goes to the I/O thread now,
        // ahead of the write queued below; the next segment is prepared
        // once the active one is half way to its roll.
        let _ = self.submit_file_work();
        self.prepare_ahead(false);
        if rolled {
            // The state at the new segment's base, or (a roll inside a
            // multi-batch append) at the LEO.
            self.snapshot_in_background(roll_snapshot);
        }
        let seq = self.next_seq.get();
        self.next_seq.set(seq + 1);
        let (tx, rx) = oneshot::channel();
        self.pending.borrow_mut().push_back(PendingCommit {
            seq,
            ticket,
            written: None,
            reply: Some(tx),
        });
        // Submit the write now (the I/O thread starts on it while the
        // shard goes on), unless a test pauses appends before their write.
        let (write, in_flight) = match write {
            Some(w) if !fault::pauses_at(fault::Stage::Reserved) => {
                let fut: WriteFuture = Box::pin(super::io::write(w.file, w.at, w.parts));
                (None, Some(fut))
            }
            w => (w, None),
        };
        Ok(Appending {
            part: self.clone(),
            seq,
            write,
            in_flight,
            outcome: None,
            reported: false,
            reply: rx,
        })
    }

    /// Takes the outcome of the write of pending append `seq`; commits every
    /// pending append at the front whose write is done, in reservation
    /// order, answers their waiters and wakes waiting fetches.
    fn written(self: &Rc<Self>, seq: u64, outcome: Result<(), std::io::Error>) {
        if let Some(p) = self.pending.borrow_mut().iter_mut().find(|p| p.seq == seq) {
            p.written = Some(outcome);
        }
        let mut committed = false;
        loop {
            let front = {
                let mut q = self.pending.borrow_mut();
                match q.front() {
                    Some(p) if p.written.is_some() => q.pop_front(),
                    _ => None,
                }
            };
            let Some(mut p) = front else { break };
            let written = match p.written.take() {
                // File work queued before this write failed (a checkpoint,
                // a new segment's names): the write is not committed.
                Some(Ok(())) if self.file_work_failed() => Some(Err(std::io::Error::other(
                    "file work queued before this write failed",
                ))),
                w => w,
            };
            let reply = match written {
                Some(Ok(())) => self
                    .commit(&p.ticket)
                    .map(|due| (p.ticket.result.clone(), due)),
                Some(Err(e)) => {
                    self.log.borrow_mut().fail(&p.ticket, &e);
                    if !self.retired.get() {
                        self.log_dir_failed(&format!("a write failed: {e}"));
                    }
                    Err(StorageError::Io(e))
                }
                None => Err(StorageError::Inconsistent {
                    path: None,
                    what: Inconsistency::CommittedUnwritten,
                }),
            };
            committed = true;
            if let Some(tx) = p.reply.take() {
                let _ = tx.send(reply);
            }
        }
        if committed {
            // A leader alone in its ISR moves the high watermark itself.
            self.maybe_advance_high_watermark();
            self.appended.notify_all();
        }
    }

    /// Stage 3 for one append: the log's commit, its index entries queued on
    /// the I/O thread, and the flush policy. Gives whether
    /// the flush policy requires an fdatasync before acks=all may be answered.
    fn commit(self: &Rc<Self>, ticket: &AppendTicket) -> Result<bool, StorageError> {
        let index_writes = self.log.borrow_mut().commit(ticket)?;
        if !index_writes.is_empty() {
            let name = "index entries";
            let r = super::io::with_io(|io| {
                for w in index_writes {
                    io.write_detached(w.file, w.at, vec![w.bytes], name);
                }
            });
            if let Err(e) = r {
                log::error!(
                    "{}-{}: index entries not written: {e}",
                    self.topic,
                    self.index
                );
            }
        }
        let (flush_messages, flush_ms) = {
            let s = self.settings.borrow();
            (s.flush_messages, s.flush_ms)
        };
        if flush_messages.is_none() && flush_ms.is_none() {
            return Ok(false);
        }
        // Only a flush policy needs to know which files hold unflushed bytes.
        let file = if ticket.batches.is_empty() {
            None
        } else {
            self.log.borrow().log_file_of(ticket.segment_base)
        };
        if let Some(file) = file {
            let mut files = self.unflushed_files.borrow_mut();
            if !files.iter().any(|f| Arc::ptr_eq(f, &file)) {
                files.push(file);
            }
        }
        let n = self.unflushed_messages.get() + ticket.result.records;
        self.unflushed_messages.set(n);
        let due = flush_messages.is_some_and(|m| n >= m);
        if due {
            self.start_flush();
        } else if let Some(ms) = flush_ms {
            self.arm_flush_timer(ms);
        }
        Ok(due)
    }

    /// Appends on the calling thread, without an I/O thread: stage 1, the
    /// write, stage 3 (tests and tools).
    #[cfg(test)]
    pub fn append_now(
        self: &Rc<Self>,
        records: &bytes::Bytes,
        batches: &[ValidatedBatch],
        now_ms: i64,
    ) -> Result<(AppendResult, bool), StorageError> {
        let mut a = self.append(records, batches, now_ms)?;
        a.reported = true;
        let outcome = match (a.in_flight.take(), a.write.take()) {
            (Some(f), _) => futures_lite::future::block_on(f),
            (None, Some(w)) => w.write_now(),
            (None, None) => Ok(()),
        };
        self.written(a.seq, outcome);
        match a.reply.try_recv() {
            Ok(Some(r)) => r,
            _ => Err(StorageError::Inconsistent {
                path: None,
                what: Inconsistency::NotCommitted,
            }),
        }
    }

    /// Resolves once `offset` is committed (below the LEO): a duplicate of
    /// a batch whose write is still in flight is answered only then.
    pub async fn wait_committed(&self, offset: i64) {
        loop {
            let g = self.appended.generation();
            if self.log.borrow().log_end_offset() > offset || !self.log.borrow().has_pending() {
                return;
            }
            super::notify::any_changed(vec![(self.appended.clone(), g)]).await;
        }
    }

    /// What a producer-state snapshot needs besides its entries: the
    /// partition directory, the LEO and the `.txnindex` files to fsync
    /// first (every segment's; the write skips those that do not exist, so
    /// no file is looked at here).
    fn snapshot_location(&self) -> (std::path::PathBuf, i64, Vec<std::path::PathBuf>) {
        let log = self.log.borrow();
        (
            log.dir().to_path_buf(),
            log.log_end_offset(),
            log.txn_index_paths(),
        )
    }

    /// The producer and transaction state as snapshot entries, now.
    fn snapshot_entries(&self) -> Vec<snapshot::SnapshotEntry> {
        snapshot::capture(&self.producers.borrow(), &self.txns.borrow())
    }

    /// Writes a producer-state snapshot at the LEO now (clean shutdown):
    /// fsyncs the `.txnindex` files, then writes `<LEO>.snapshot`, keeping
    /// the newest two. Errors with the I/O failure.
    pub fn write_snapshot(&self) -> std::io::Result<()> {
        let (dir, offset, indexes) = self.snapshot_location();
        write_snapshot_files(&dir, offset, &self.snapshot_entries(), &indexes)
    }

    /// Writes a producer-state snapshot after a segment roll (Kafka takes
    /// one per segment, named by the new segment's base offset), on the
    /// blocking pool so the reactor never waits for the fsyncs. `at` is the
    /// new segment's base offset and the state captured there; without it
    /// the snapshot is taken at the LEO. A failure is logged: start-up then
    /// replays more of the log.
    fn snapshot_in_background(self: &Rc<Self>, at: Option<(i64, Vec<snapshot::SnapshotEntry>)>) {
        let (dir, leo, indexes) = self.snapshot_location();
        let (offset, entries) = at.unwrap_or_else(|| (leo, self.snapshot_entries()));
        let name = format!("{}-{}", self.topic, self.index);
        let (me, truncations) = (self.clone(), self.truncations.get());
        // `.txnindex` appends queued on the I/O thread before it land first:
        // the snapshot fsyncs those files and then covers their entries.
        let barrier = super::io::io_barrier();
        crate::shard::stall::spawn_local("snapshot", async move {
            if let Err(e) = barrier.await {
                log::warn!("{name}: no producer-state snapshot at {offset}: {e}");
                return;
            }
            if me.retired.get() {
                // Its directory is being deleted.
                return;
            }
            let res = glommio::executor()
                .spawn_blocking(move || write_snapshot_files(&dir, offset, &entries, &indexes))
                .await;
            if let Err(e) = res {
                log::warn!("{name}: cannot write the producer-state snapshot at {offset}: {e}");
            }
            me.drop_snapshot_if_truncated(truncations, offset);
        })
        .detach();
    }

    /// The log directory failed under this partition (a write or an
    /// fdatasync of its files failed; ENOSPC or EIO): as Kafka does when
    /// its only log directory fails, the broker stops, so its leaderships
    /// move to replicas whose disks work (controlled shutdown first) instead
    /// of staying with a log that refuses appends. Acknowledged records
    /// stay as they are on disk; recovery cuts a torn tail at the next
    /// start.
    fn log_dir_failed(&self, what: &str) {
        crate::shard::fatal::stop_broker(format!(
            "the log directory of {}-{} failed: {what}",
            self.topic, self.index
        ));
    }

    /// Forgets producers idle for `producer.id.expiration.ms` (`expiration_ms`)
    /// at `now_ms`, except those with an ongoing transaction. Gives how many
    /// were removed.
    pub fn expire_producers(&self, now_ms: i64, expiration_ms: i64) -> usize {
        let txns = self.txns.borrow();
        self.producers
            .borrow_mut()
            .expire_except(now_ms, expiration_ms, |pid| txns.is_ongoing(pid))
    }

    /// Writes a transaction marker (KIP-98 WriteTxnMarkers, called by the
    /// transaction coordinator on the owner shard through `Shard::invoke_on`).
    ///
    /// Takes the producer id and epoch, `commit` (true = COMMIT, false =
    /// ABORT) and the coordinator epoch. Appends one v2 control batch
    /// (attributes transactional|control, base sequence -1, one control
    /// record: key `version 0, type 0|1`, value `version 0, coordinator
    /// epoch`) through the normal append path, so the producer's transaction
    /// ends, the LSO moves, an ABORT is added to the aborted-transaction
    /// index and the producer's epoch becomes `producer_epoch` when newer
    /// (fencing batches of older epochs). Waits for the flush policy as
    /// acks=all does. Gives the marker's offset, or the [`MarkerError`]:
    /// `Producer(FencedEpoch)` (INVALID_PRODUCER_EPOCH, 47) when
    /// `producer_epoch` is older than the epoch the partition knows for the
    /// producer; `Producer(CoordinatorFenced)` (TRANSACTION_COORDINATOR_FENCED,
    /// 52) when an earlier marker came from a newer coordinator epoch;
    /// `InvalidProducerId` (INVALID_REQUEST, 42) for a negative producer id;
    /// `NotLeader` (NOT_LEADER_OR_FOLLOWER, 6) on a follower;
    /// `Append` (KAFKA_STORAGE_ERROR, 56, on I/O failure).
    pub async fn write_marker(
        self: &Rc<Self>,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        coordinator_epoch: i32,
    ) -> Result<i64, MarkerError> {
        if producer_id < 0 {
            return Err(MarkerError::InvalidProducerId(producer_id));
        }
        // A follower's log takes only the leader's batches.
        if !self.is_leader() {
            return Err(MarkerError::NotLeader);
        }
        if let Some(e) = self.producers.borrow().get(producer_id) {
            if producer_epoch < e.epoch {
                return Err(MarkerError::Producer(ProducerStateError::FencedEpoch {
                    producer_id,
                    epoch: producer_epoch,
                    current_epoch: e.epoch,
                }));
            }
        }
        self.txns
            .borrow()
            .check_coordinator_epoch(producer_id, coordinator_epoch)?;
        let now = crate::shard::now_ms();
        let bytes = encode_marker(producer_id, producer_epoch, commit, coordinator_epoch, now)?;
        let res = crate::shard::internal::append_encoded(self, bytes, now).await?;
        Ok(res.base_offset)
    }
}

/// Encodes one v2 control batch holding a COMMIT or ABORT marker (KIP-98
/// `EndTransactionMarker`), uncompressed, timestamp `now_ms` (ms). Gives
/// the batch bytes, or [`InternalAppendError::Encode`] (UNKNOWN_SERVER_ERROR,
/// -1) if encoding fails.
pub(crate) fn encode_marker(
    producer_id: i64,
    producer_epoch: i16,
    commit: bool,
    coordinator_epoch: i32,
    now_ms: i64,
) -> Result<bytes::Bytes, InternalAppendError> {
    let record = Record {
        transactional: true,
        control: true,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id,
        producer_epoch,
        timestamp_type: RecordTsType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: now_ms,
        key: Some(bytes::Bytes::copy_from_slice(&control_key(commit))),
        value: Some(bytes::Bytes::copy_from_slice(&control_value(
            coordinator_epoch,
        ))),
        headers: Default::default(),
    };
    super::internal::encode_batch(std::slice::from_ref(&record))
}

#[cfg(test)]
mod tests;
