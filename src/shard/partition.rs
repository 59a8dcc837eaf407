//! One partition as its owner shard holds it: the log, the append signal that
//! wakes long-poll fetches, the flush policy with group commit, and the
//! producer and transaction state (KIP-98: LSO, aborted transactions,
//! markers).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use futures_channel::oneshot;
use kafka_protocol::records::{Record, TimestampType as RecordTsType};
use kafka_protocol::ResponseError as E;
use uuid::Uuid;

use super::notify::Notify;
use crate::cluster::topic_config::TopicSettings;
use crate::storage::cleaner::{CleanStats, CompactionConfig};
use crate::storage::txn_index::{control_key, control_marker, control_value, ControlMarker};
use crate::storage::{
    AppendResult, BatchHeader, PartitionLog, ReadMode, ReadResult, StorageError, ValidatedBatch,
};
use crate::txn::partition_txns::{AbortedTxn, PartitionTxns};
use crate::txn::producer_state::ProducerStateMap;
use crate::txn::snapshot;

/// Fetch `isolation_level` 1 (KIP-98): only data below the LSO is returned.
pub const READ_COMMITTED: i8 = 1;

/// A fetch read with its isolation level applied (see
/// [`Partition::read_isolated`]).
#[derive(Debug, Clone)]
pub struct IsolatedRead {
    /// Whole batches (below the high watermark, or the LSO for READ_COMMITTED).
    pub read: ReadResult,
    /// The last stable offset at read time.
    pub last_stable_offset: i64,
    /// READ_COMMITTED: (producer id, first offset) of the aborted
    /// transactions overlapping the returned range, by first offset;
    /// READ_UNCOMMITTED: None (the Fetch response's null list).
    pub aborted: Option<Vec<(i64, i64)>>,
}

impl IsolatedRead {
    /// Gives the end (exclusive offset) of the range whose aborted
    /// transactions a READ_COMMITTED response lists: the end of the returned
    /// data capped at the LSO, or the LSO when nothing is returned.
    pub fn aborted_upper(&self) -> i64 {
        if self.read.bytes > 0 {
            self.read.end_offset.min(self.last_stable_offset)
        } else {
            self.last_stable_offset
        }
    }

    /// Takes an offset; drops the aborted transactions starting at or after
    /// it (they do not overlap [fetch offset, `upper`)).
    pub fn keep_aborted_below(&mut self, upper: i64) {
        if let Some(a) = self.aborted.as_mut() {
            a.retain(|(_, first)| *first < upper);
        }
    }
}

/// Applies one appended batch (header, offset of its first record, and the
/// marker for a control batch) to the producer and transaction state; gives
/// the aborted transaction an ABORT marker completed.
fn apply_batch(
    producers: &mut ProducerStateMap,
    txns: &mut PartitionTxns,
    h: &BatchHeader,
    first_offset: i64,
    marker: Option<ControlMarker>,
) -> Option<AbortedTxn> {
    if h.is_control() {
        producers.apply_marker(h);
        match marker {
            Some(m) if h.producer_id >= 0 => txns.on_marker(h.producer_id, first_offset, m),
            _ => None,
        }
    } else {
        producers.update(h, first_offset);
        txns.on_data_batch(h, first_offset);
        None
    }
}

/// Rebuilds a partition's producer and transaction state at start-up: from
/// the newest producer-state snapshot at or below the log end (and the
/// `.txnindex` files below it) plus the batches after it, or from the whole
/// log when there is no usable snapshot. Rewrites `.txnindex` files that
/// disagree with the result.
fn rebuild_state(topic: &str, index: i32, log: &PartitionLog) -> (ProducerStateMap, PartitionTxns) {
    let mut producers = ProducerStateMap::default();
    let mut txns = PartitionTxns::default();
    let start = log.log_start_offset();
    let mut from = start;
    // A snapshot below the log start is not used: the markers between it
    // and the log start are gone, so it would bring back transactions that
    // ended there.
    let usable = snapshot::latest(log.dir(), log.log_end_offset()).filter(|(o, _)| *o >= start);
    if let Some((offset, entries)) = usable {
        match log.txn_index_entries_below(offset) {
            Ok(aborted) => {
                snapshot::restore(&entries, &mut producers, &mut txns);
                txns.set_aborted(aborted);
                from = offset;
                ::log::info!(
                    "{topic}-{index}: producer state from the snapshot at offset {offset} ({} producers)",
                    entries.len()
                );
            }
            Err(e) => ::log::warn!(
                "{topic}-{index}: cannot read aborted-transaction indexes ({e}); rebuilding from the whole log"
            ),
        }
    }
    match log.batches_with_markers(from) {
        Ok(batches) => {
            for (h, marker) in &batches {
                apply_batch(&mut producers, &mut txns, h, h.base_offset, *marker);
            }
            // The log is the source of truth for the `.txnindex` files.
            if let Err(e) = log.sync_txn_indexes(txns.aborted(), from) {
                ::log::warn!("{topic}-{index}: cannot rewrite aborted-transaction indexes: {e}");
            }
            txns.drop_aborted_before(start);
        }
        Err(e) => {
            ::log::warn!("{topic}-{index}: cannot rebuild producer and transaction state: {e}")
        }
    }
    (producers, txns)
}

/// Producer-state snapshots kept per partition.
const SNAPSHOTS_KEPT: usize = 2;

/// fsyncs `indexes`, then writes the snapshot of `entries` at `offset`.
fn write_snapshot_files(
    dir: &std::path::Path,
    offset: i64,
    entries: &[snapshot::SnapshotEntry],
    indexes: &[std::path::PathBuf],
) -> std::io::Result<()> {
    for p in indexes {
        match std::fs::File::open(p) {
            Ok(f) => f.sync_all()?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    snapshot::write(dir, offset, entries, SNAPSHOTS_KEPT)
}

/// Someone waiting until every offset below `.0` is durable.
type FlushWaiter = (i64, oneshot::Sender<Result<(), String>>);

/// A partition owned by this shard. Only this shard touches it, so plain
/// `RefCell`/`Cell` suffice; no borrow is held across an `.await`.
pub struct Partition {
    /// Topic name.
    pub topic: Arc<str>,
    /// Partition index.
    pub index: i32,
    /// Topic id (KIP-516).
    pub topic_id: Uuid,
    /// Leader epoch written into appended batches (0 on a single node).
    pub leader_epoch: i32,
    /// The log.
    pub log: RefCell<PartitionLog>,
    /// Bumped after every append (wakes fetches waiting for data).
    pub appended: Rc<Notify>,
    settings: RefCell<TopicSettings>,
    /// Idempotent producers' sequence state (KIP-98).
    pub producers: RefCell<ProducerStateMap>,
    /// Ongoing and aborted transactions (KIP-98), giving the LSO.
    pub txns: RefCell<PartitionTxns>,
    unflushed_messages: Cell<u64>,
    /// Every offset below this is on stable storage (fdatasync done).
    flushed_offset: Cell<i64>,
    flushing: Cell<bool>,
    flush_timer_armed: Cell<bool>,
    flush_waiters: RefCell<Vec<FlushWaiter>>,
}

impl Partition {
    /// Wraps an opened log.
    pub fn new(
        topic: Arc<str>,
        index: i32,
        topic_id: Uuid,
        log: PartitionLog,
        settings: TopicSettings,
    ) -> Partition {
        let leo = log.log_end_offset();
        let (producers, txns) = rebuild_state(&topic, index, &log);
        Partition {
            topic,
            index,
            topic_id,
            leader_epoch: 0,
            log: RefCell::new(log),
            appended: Rc::new(Notify::default()),
            settings: RefCell::new(settings),
            producers: RefCell::new(producers),
            txns: RefCell::new(txns),
            unflushed_messages: Cell::new(0),
            flushed_offset: Cell::new(leo),
            flushing: Cell::new(false),
            flush_timer_armed: Cell::new(false),
            flush_waiters: RefCell::new(Vec::new()),
        }
    }

    /// The partition's effective settings.
    pub fn settings(&self) -> TopicSettings {
        self.settings.borrow().clone()
    }

    /// Replaces the settings (topic config change).
    pub fn set_settings(&self, s: TopicSettings) {
        self.log.borrow_mut().set_config(s.log.clone());
        *self.settings.borrow_mut() = s;
    }

    /// True when a flush policy (`flush.messages` / `flush.ms`) is configured.
    pub fn has_flush_policy(&self) -> bool {
        let s = self.settings.borrow();
        s.flush_messages.is_some() || s.flush_ms.is_some()
    }

    /// Appends validated batches (see `storage::PartitionLog::append`),
    /// updates the producer and transaction state (a control batch ends its
    /// producer's transaction; an ABORT marker adds an entry to the
    /// `.txnindex` of the segment holding it), wakes waiting fetches and
    /// applies the flush policy. The returned flag says whether the flush
    /// policy requires an fdatasync before acks=all may be answered; call
    /// [`Partition::wait_flushed`] with `last_offset + 1` then. A failed
    /// `.txnindex` write gives `Io` after the data was appended and the
    /// state updated (KAFKA_STORAGE_ERROR; the file is rebuilt at start-up).
    pub fn append(
        self: &Rc<Self>,
        records: &[u8],
        batches: &[ValidatedBatch],
        now_ms: i64,
    ) -> Result<(AppendResult, bool), StorageError> {
        let (result, rolled_from, index_err, roll_snapshot) = {
            let mut log = self.log.borrow_mut();
            let before = log.active_log_file();
            let r = log.append(records, batches, self.leader_epoch, now_ms)?;
            let rolled = !Arc::ptr_eq(&before, &log.active_log_file());
            let mut producers = self.producers.borrow_mut();
            let mut txns = self.txns.borrow_mut();
            let mut index_err = None;
            // Kafka takes the roll's snapshot at the new segment's base
            // offset, with the state of the batches below it.
            let roll_base = rolled.then(|| log.active_base_offset());
            let mut roll_snapshot = None;
            let mut first = r.base_offset;
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
                    if let Err(e) = log.append_txn_index(&a) {
                        log::error!("{}-{}: .txnindex write failed: {e}", self.topic, self.index);
                        index_err.get_or_insert(e);
                    }
                }
                first += b.header.last_offset_delta as i64 + 1;
            }
            (r, rolled.then_some(before), index_err, roll_snapshot)
        };
        self.appended.notify_all();
        if rolled_from.is_some() {
            self.snapshot_in_background(roll_snapshot);
        }
        let (flush_messages, flush_ms) = {
            let s = self.settings.borrow();
            (s.flush_messages, s.flush_ms)
        };
        if let Some(e) = index_err {
            if flush_messages.is_some() || flush_ms.is_some() {
                self.start_flush();
            }
            return Err(e);
        }
        if flush_messages.is_none() && flush_ms.is_none() {
            return Ok((result, false));
        }
        if let Some(old) = rolled_from {
            // The rolled segment may hold unflushed records: make it durable now
            // (rolls are rare: once per segment.bytes).
            old.sync_data()?;
        }
        let n = self.unflushed_messages.get() + result.records;
        self.unflushed_messages.set(n);
        let due = flush_messages.is_some_and(|m| n >= m);
        if due {
            self.start_flush();
        } else if let Some(ms) = flush_ms {
            self.arm_flush_timer(ms);
        }
        Ok((result, due))
    }

    /// What a producer-state snapshot needs besides its entries: the
    /// partition directory, the LEO and the `.txnindex` files to fsync first.
    fn snapshot_location(&self) -> (std::path::PathBuf, i64, Vec<std::path::PathBuf>) {
        let log = self.log.borrow();
        (
            log.dir().to_path_buf(),
            log.log_end_offset(),
            log.txn_index_files(),
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
        glommio::spawn_local(async move {
            let res = glommio::executor()
                .spawn_blocking(move || write_snapshot_files(&dir, offset, &entries, &indexes))
                .await;
            if let Err(e) = res {
                log::warn!("{name}: cannot write the producer-state snapshot at {offset}: {e}");
            }
        })
        .detach();
    }

    /// Resolves once every offset below `offset` is on stable storage.
    /// Errors with the fdatasync failure (mapped to KAFKA_STORAGE_ERROR).
    pub async fn wait_flushed(self: &Rc<Self>, offset: i64) -> Result<(), String> {
        if self.flushed_offset.get() >= offset {
            return Ok(());
        }
        let (tx, rx) = oneshot::channel();
        self.flush_waiters.borrow_mut().push((offset, tx));
        self.start_flush();
        rx.await.unwrap_or_else(|_| Err("flush abandoned".into()))
    }

    fn arm_flush_timer(self: &Rc<Self>, ms: u64) {
        if self.flush_timer_armed.replace(true) {
            return;
        }
        let me = self.clone();
        glommio::spawn_local(async move {
            glommio::timer::sleep(Duration::from_millis(ms)).await;
            me.flush_timer_armed.set(false);
            if me.unflushed_messages.get() > 0 {
                me.start_flush();
            }
        })
        .detach();
    }

    /// Starts a group commit unless one is running: one fdatasync (on the
    /// blocking pool, off the reactor) covers every append made before it
    /// started; waiters beyond it trigger another round.
    fn start_flush(self: &Rc<Self>) {
        if self.flushing.replace(true) {
            return;
        }
        let me = self.clone();
        glommio::spawn_local(async move {
            loop {
                let (file, target) = {
                    let log = me.log.borrow();
                    (log.active_log_file(), log.log_end_offset())
                };
                me.unflushed_messages.set(0);
                let res = glommio::executor()
                    .spawn_blocking(move || file.sync_data())
                    .await
                    .map_err(|e| e.to_string());
                if res.is_ok() {
                    me.flushed_offset.set(me.flushed_offset.get().max(target));
                }
                let done: Vec<_> = {
                    let mut w = me.flush_waiters.borrow_mut();
                    let (done, keep): (Vec<_>, Vec<_>) = w
                        .drain(..)
                        .partition(|(off, _)| res.is_err() || *off <= target);
                    *w = keep;
                    done
                };
                for (_, tx) in done {
                    let _ = tx.send(res.clone());
                }
                let more = !me.flush_waiters.borrow().is_empty()
                    || (me.unflushed_messages.get() > 0
                        && me
                            .settings
                            .borrow()
                            .flush_messages
                            .is_some_and(|m| me.unflushed_messages.get() >= m));
                if !more {
                    break;
                }
            }
            me.flushing.set(false);
        })
        .detach();
    }

    /// Runs retention (`retention.ms`, `retention.bytes`) when the topic's
    /// `cleanup.policy` includes `delete`; removed files are unlinked after
    /// `file.delete.delay.ms`. Gives the number of segments removed.
    pub fn apply_retention(&self, now_ms: i64) -> Result<usize, StorageError> {
        let s = self.settings();
        if !s.delete || (s.retention_ms.is_none() && s.retention_bytes.is_none()) {
            return Ok(0);
        }
        let (deleted, reason) =
            self.log
                .borrow_mut()
                .apply_retention(now_ms, s.retention_ms, s.retention_bytes)?;
        if deleted.segments > 0 {
            log::info!(
                "{}-{}: retention ({reason:?}) deleted {} segment(s), {} bytes; log start offset now {}",
                self.topic,
                self.index,
                deleted.segments,
                deleted.bytes,
                self.log.borrow().log_start_offset()
            );
        }
        let n = deleted.segments;
        if n > 0 {
            let start = self.log.borrow().log_start_offset();
            self.txns.borrow_mut().drop_aborted_before(start);
        }
        remove_later(deleted.files, s.file_delete_delay_ms);
        Ok(n)
    }

    /// One compaction pass (at most `max_segments` segments rewritten) when
    /// `cleanup.policy` includes `compact`. Gives what was done.
    pub fn compact(&self, now_ms: i64, max_segments: usize) -> Result<CleanStats, StorageError> {
        let s = self.settings();
        if !s.compact {
            return Ok(CleanStats::default());
        }
        let cfg = CompactionConfig {
            min_compaction_lag_ms: s.min_compaction_lag_ms,
            max_compaction_lag_ms: s.max_compaction_lag_ms,
            min_cleanable_dirty_ratio: s.min_cleanable_dirty_ratio,
            delete_retention_ms: s.delete_retention_ms,
        };
        // Never past the first undecided transaction (see
        // `PartitionLog::compact_with_txns`).
        let (stable, aborted) = {
            let t = self.txns.borrow();
            let hw = self.log.borrow().high_watermark();
            (
                t.first_unstable_offset().map_or(hw, |o| o.min(hw)),
                t.aborted().to_vec(),
            )
        };
        let stats =
            self.log
                .borrow_mut()
                .compact_with_txns(now_ms, cfg, max_segments, stable, &aborted)?;
        if stats.segments > 0 {
            log::info!(
                "{}-{}: compacted {} segment(s), {} -> {} bytes ({} superseded records, {} tombstones removed)",
                self.topic,
                self.index,
                stats.segments,
                stats.bytes_before,
                stats.bytes_after,
                stats.superseded,
                stats.tombstones
            );
        }
        Ok(stats)
    }

    /// DeleteRecords: moves the log start offset to `offset` (-1 = high
    /// watermark); gives the new low watermark.
    pub fn delete_records(&self, offset: i64) -> Result<i64, StorageError> {
        let (low, deleted) = self.log.borrow_mut().delete_records_before(offset)?;
        self.txns.borrow_mut().drop_aborted_before(low);
        remove_later(deleted.files, self.settings().file_delete_delay_ms);
        Ok(low)
    }

    /// Gives the last stable offset (KIP-98): min(first offset of every
    /// ongoing transaction, clamped to the log start offset; high
    /// watermark). Equal to the high watermark when no transaction is open.
    pub fn last_stable_offset(&self) -> i64 {
        let log = self.log.borrow();
        self.txns
            .borrow()
            .last_stable_offset(log.log_start_offset(), log.high_watermark())
    }

    /// Fetch read with an isolation level (Fetch v4+ `isolation_level`):
    /// 0 (READ_UNCOMMITTED) reads up to the high watermark with no aborted
    /// list; 1 (READ_COMMITTED) reads whole batches whose last offset is
    /// below the LSO and lists the aborted transactions overlapping
    /// [fetch offset, end of the returned data) — or [fetch offset, LSO)
    /// when nothing is returned — as (producer id, first offset) by first
    /// offset (Kafka `collectAbortedTransactions`). Errors as
    /// `PartitionLog::read_bounded` (OFFSET_OUT_OF_RANGE, KAFKA_STORAGE_ERROR).
    pub fn read_isolated(
        &self,
        offset: i64,
        max_bytes: u64,
        min_one_batch: bool,
        isolation_level: i8,
    ) -> Result<IsolatedRead, StorageError> {
        let mut r = self.read_isolated_in(
            offset,
            max_bytes,
            min_one_batch,
            isolation_level,
            ReadMode::Blocking,
        )?;
        let upper = r.aborted_upper();
        r.keep_aborted_below(upper);
        Ok(r)
    }

    /// As [`Self::read_isolated`], with batch headers read in `mode` (under
    /// [`ReadMode::NoWait`], [`StorageError::NotCached`] when a header is
    /// not in the page cache) and, for READ_COMMITTED, the aborted
    /// transactions overlapping [fetch offset, LSO): the widest list any
    /// cut of the returned batches can need. A caller that keeps all or
    /// part of the data narrows it with [`IsolatedRead::keep_aborted_below`].
    pub fn read_isolated_in(
        &self,
        offset: i64,
        max_bytes: u64,
        min_one_batch: bool,
        isolation_level: i8,
        mode: ReadMode,
    ) -> Result<IsolatedRead, StorageError> {
        let lso = self.last_stable_offset();
        let bound = if isolation_level == READ_COMMITTED {
            lso
        } else {
            self.log.borrow().high_watermark()
        };
        let read =
            self.log
                .borrow()
                .read_bounded_in(offset, max_bytes, min_one_batch, bound, mode)?;
        let aborted = (isolation_level == READ_COMMITTED)
            .then(|| self.txns.borrow().aborted_in_range(offset, lso));
        Ok(IsolatedRead {
            read,
            last_stable_offset: lso,
            aborted,
        })
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
    /// acks=all does. Gives the marker's offset, or the Kafka error code:
    /// INVALID_PRODUCER_EPOCH (47) when `producer_epoch` is older than the
    /// epoch the partition knows for the producer;
    /// TRANSACTION_COORDINATOR_FENCED (52) when an earlier marker came from
    /// a newer coordinator epoch; INVALID_REQUEST (42) for a negative
    /// producer id; KAFKA_STORAGE_ERROR (56) on I/O failure.
    pub async fn write_marker(
        self: &Rc<Self>,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        coordinator_epoch: i32,
    ) -> Result<i64, i16> {
        if producer_id < 0 {
            return Err(E::InvalidRequest.code());
        }
        if let Some(e) = self.producers.borrow().get(producer_id) {
            if producer_epoch < e.epoch {
                return Err(E::InvalidProducerEpoch.code());
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

    /// Reads whole batches (see `storage::PartitionLog::read`).
    pub fn read(
        &self,
        offset: i64,
        max_bytes: u64,
        min_one_batch: bool,
    ) -> Result<ReadResult, StorageError> {
        self.log.borrow().read(offset, max_bytes, min_one_batch)
    }
}

/// Encodes one v2 control batch holding a COMMIT or ABORT marker (KIP-98
/// `EndTransactionMarker`), uncompressed, timestamp `now_ms` (ms). Gives
/// the batch bytes, or UNKNOWN_SERVER_ERROR (-1) if encoding fails.
pub(crate) fn encode_marker(
    producer_id: i64,
    producer_epoch: i16,
    commit: bool,
    coordinator_epoch: i32,
    now_ms: i64,
) -> Result<bytes::Bytes, i16> {
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

/// Unlinks `*.deleted` files after `delay_ms` (Kafka's `file.delete.delay.ms`)
/// so that fetches already reading them finish first.
fn remove_later(files: Vec<std::path::PathBuf>, delay_ms: u64) {
    if files.is_empty() {
        return;
    }
    glommio::spawn_local(async move {
        glommio::timer::sleep(Duration::from_millis(delay_ms)).await;
        for f in files {
            if let Err(e) = std::fs::remove_file(&f) {
                log::warn!("cannot remove {}: {e}", f.display());
            }
        }
    })
    .detach();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::segment::segment_file_name;
    use crate::storage::txn_index::{read_txn_index, AbortedTxn};
    use crate::storage::{validate_batches, LogConfig};
    use crate::txn::producer_state::Check;
    use bytes::BytesMut;
    use kafka_protocol::records::{Compression, RecordBatchEncoder, RecordEncodeOptions};
    use std::collections::BTreeMap;
    use std::path::Path;

    /// A batch of `n` records (keys k0.., values v0..), transactional when
    /// `txn`, for producer `pid`/`epoch` starting at sequence `seq` (-1 = none).
    pub(crate) fn batch(pid: i64, epoch: i16, seq: i32, n: i64, txn: bool) -> bytes::Bytes {
        let recs: Vec<Record> = (0..n)
            .map(|i| Record {
                transactional: txn,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: pid,
                producer_epoch: epoch,
                timestamp_type: RecordTsType::Creation,
                offset: i,
                sequence: seq + i as i32,
                timestamp: 1_000 + i,
                key: Some(bytes::Bytes::from(format!("k{i}"))),
                value: Some(bytes::Bytes::from(format!("v{i}"))),
                headers: Default::default(),
            })
            .collect();
        let mut buf = BytesMut::new();
        let opts = RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        };
        RecordBatchEncoder::encode(&mut buf, recs.iter(), &opts).unwrap();
        buf.freeze()
    }

    fn open(dir: &Path, segment_bytes: u64) -> Rc<Partition> {
        let mut settings = crate::cluster::topic_config::settings(
            &crate::config::Config::default(),
            &BTreeMap::new(),
        );
        settings.log = LogConfig {
            segment_bytes,
            ..LogConfig::default()
        };
        let log = PartitionLog::open(dir, settings.log.clone()).unwrap();
        Rc::new(Partition::new(
            Arc::from("t"),
            0,
            Uuid::nil(),
            log,
            settings,
        ))
    }

    fn produce(p: &Rc<Partition>, b: &bytes::Bytes) -> Result<i64, i16> {
        let v = validate_batches(b, usize::MAX).map_err(|e| {
            use crate::error::KafkaCode;
            e.code()
        })?;
        let headers: Vec<_> = v.iter().map(|b| b.header).collect();
        if p.producers.borrow().check(&headers)? != Check::Append {
            return Err(-100);
        }
        Ok(p.append(b, &v, crate::shard::now_ms())
            .unwrap()
            .0
            .base_offset)
    }

    /// (batch offset ranges, LSO, aborted list) of a READ_COMMITTED read.
    type CommittedRead = (Vec<(i64, i64)>, i64, Option<Vec<(i64, i64)>>);

    fn committed_offsets(p: &Partition, from: i64) -> CommittedRead {
        let r = p
            .read_isolated(from, u64::MAX, true, READ_COMMITTED)
            .unwrap();
        let mut bytes = Vec::new();
        for reg in &r.read.regions {
            let mut b = vec![0u8; reg.len as usize];
            std::os::unix::fs::FileExt::read_exact_at(&*reg.file, &mut b, reg.position).unwrap();
            bytes.extend(b);
        }
        let mut ranges = Vec::new();
        let mut pos = 0;
        while pos < bytes.len() {
            let h = BatchHeader::parse(&bytes[pos..]).unwrap();
            ranges.push((h.base_offset, h.last_offset()));
            pos += h.total_size();
        }
        (ranges, r.last_stable_offset, r.aborted)
    }

    #[test]
    fn markers_lso_aborted_index_and_rebuild() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        glommio::LocalExecutor::default().run(async move {
            let p = open(&path, 1 << 30);
            assert_eq!(produce(&p, &batch(-1, -1, -1, 2, false)), Ok(0)); // 0..=1
            assert_eq!(produce(&p, &batch(1, 0, 0, 2, true)), Ok(2)); // 2..=3 txn pid 1
            assert_eq!(p.last_stable_offset(), 2);
            assert_eq!(produce(&p, &batch(2, 0, 0, 1, true)), Ok(4)); // 4 txn pid 2
            assert_eq!(p.txns.borrow().ongoing_first_offset(2), Some(4));
            // Only the data before the first open transaction is readable.
            let (r, lso, aborted) = committed_offsets(&p, 0);
            assert_eq!((r, lso, aborted), (vec![(0, 1)], 2, Some(vec![])));
            assert!(committed_offsets(&p, 2).0.is_empty());
            let unc = p.read_isolated(2, u64::MAX, true, 0).unwrap();
            assert!(unc.read.bytes > 0 && unc.aborted.is_none());
            assert_eq!(unc.last_stable_offset, 2);

            assert_eq!(p.write_marker(1, 0, true, 5).await, Ok(5));
            assert_eq!(p.last_stable_offset(), 4);
            assert_eq!(p.write_marker(2, 0, false, 5).await, Ok(6));
            assert_eq!(p.last_stable_offset(), 7);
            let want = AbortedTxn {
                producer_id: 2,
                first_offset: 4,
                last_offset: 6,
                last_stable_offset: 7,
            };
            assert_eq!(p.txns.borrow().aborted(), &[want]);
            let idx = path.join(segment_file_name(0, "txnindex"));
            assert_eq!(std::fs::read(&idx).unwrap(), want.encode().to_vec());
            let (r, lso, aborted) = committed_offsets(&p, 0);
            assert_eq!(r, vec![(0, 1), (2, 3), (4, 4), (5, 5), (6, 6)]);
            assert_eq!((lso, aborted), (7, Some(vec![(2, 4)])));
            // From 5 the aborted transaction still overlaps (its marker is at 6).
            assert_eq!(committed_offsets(&p, 5).2, Some(vec![(2, 4)]));

            // An open transaction after the abort bounds the read again.
            assert_eq!(produce(&p, &batch(3, 0, 0, 2, true)), Ok(7)); // 7..=8
            let (r, lso, aborted) = committed_offsets(&p, 7);
            assert_eq!((r, lso, aborted), (vec![], 7, Some(vec![])));

            // A marker with a newer epoch fences the producer's old epoch.
            assert_eq!(p.write_marker(3, 1, false, 5).await, Ok(9));
            assert_eq!(p.producers.borrow().get(3).map(|e| e.epoch), Some(1));
            assert_eq!(
                produce(&p, &batch(3, 0, 2, 1, true)),
                Err(E::InvalidProducerEpoch.code())
            );
            assert_eq!(
                p.write_marker(3, 0, true, 5).await,
                Err(E::InvalidProducerEpoch.code())
            );
            // A marker from an older coordinator epoch is fenced.
            assert_eq!(
                p.write_marker(1, 0, true, 4).await,
                Err(E::TransactionCoordinatorFenced.code())
            );
            assert_eq!(p.last_stable_offset(), 10);
            let state = |p: &Partition| {
                let t = p.txns.borrow();
                (
                    t.aborted().to_vec(),
                    t.ongoing_count(),
                    t.coordinator_epoch(1),
                    p.last_stable_offset(),
                    p.producers.borrow().snapshot(),
                )
            };
            let before = state(&p);
            assert_eq!(before.0.len(), 2);
            // An open transaction survives a restart too.
            assert_eq!(produce(&p, &batch(4, 0, 0, 1, true)), Ok(10));
            let before = (before.0, 1, before.2, 10, p.producers.borrow().snapshot());
            drop(p);

            // Reopen: the state is rebuilt from the log; a missing
            // .txnindex is rewritten with the same bytes.
            let bytes = std::fs::read(&idx).unwrap();
            std::fs::remove_file(&idx).unwrap();
            let p = open(&path, 1 << 30);
            assert_eq!(state(&p), before);
            assert_eq!(std::fs::read(&idx).unwrap(), bytes);
            drop(p);
            // A .txnindex that disagrees with the log is rewritten.
            std::fs::write(&idx, &bytes[..34]).unwrap();
            let p = open(&path, 1 << 30);
            assert_eq!(std::fs::read(&idx).unwrap(), bytes);
            assert_eq!(read_txn_index(&idx).unwrap().map(|v| v.len()), Some(2));
            assert_eq!(p.write_marker(4, 0, true, 5).await, Ok(11));
            assert_eq!(p.last_stable_offset(), 12);
        });
    }

    #[test]
    fn txn_index_follows_segments_on_delete_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        glommio::LocalExecutor::default().run(async move {
            // Small segments: every batch rolls a new one.
            let p = open(&path, 100);
            assert_eq!(produce(&p, &batch(1, 0, 0, 3, true)), Ok(0));
            assert_eq!(p.write_marker(1, 0, false, 0).await, Ok(3));
            assert_eq!(produce(&p, &batch(-1, -1, -1, 1, false)), Ok(4));
            let bases = p.log.borrow().segment_base_offsets();
            assert_eq!(bases, vec![0, 3, 4]);
            let idx = path.join(segment_file_name(3, "txnindex"));
            assert!(idx.exists());
            assert!(!path.join(segment_file_name(0, "txnindex")).exists());
            assert_eq!(p.txns.borrow().aborted().len(), 1);
            assert_eq!(p.delete_records(4).unwrap(), 4);
            assert!(!idx.exists());
            assert!(path
                .join(format!("{}.deleted", segment_file_name(3, "txnindex")))
                .exists());
            assert!(p.txns.borrow().aborted().is_empty());
            assert_eq!(committed_offsets(&p, 4).2, Some(vec![]));
        });
    }

    #[test]
    fn snapshot_restores_the_same_state_as_a_full_rebuild() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        glommio::LocalExecutor::default().run(async move {
            let state = |p: &Partition| {
                let t = p.txns.borrow();
                (
                    t.aborted().to_vec(),
                    t.ongoing_first_offset(3),
                    t.coordinator_epoch(2),
                    p.last_stable_offset(),
                    p.producers.borrow().snapshot(),
                )
            };
            let p = open(&path, 1 << 30);
            assert_eq!(produce(&p, &batch(1, 0, 0, 3, false)), Ok(0)); // idempotent 0..=2
            assert_eq!(produce(&p, &batch(2, 0, 0, 2, true)), Ok(3)); // txn 3..=4
            assert_eq!(p.write_marker(2, 0, false, 1).await, Ok(5)); // aborted
            assert_eq!(produce(&p, &batch(3, 0, 0, 1, true)), Ok(6)); // open txn at 6
            p.write_snapshot().unwrap();
            assert_eq!(snapshot::list(&path).len(), 1);
            // After the snapshot: more batches, another abort.
            assert_eq!(produce(&p, &batch(1, 0, 3, 2, false)), Ok(7));
            assert_eq!(produce(&p, &batch(2, 1, 0, 1, true)), Ok(9));
            assert_eq!(p.write_marker(2, 1, false, 1).await, Ok(10));
            let before = state(&p);
            assert_eq!(before.0.len(), 2);
            assert_eq!(before.1, Some(6));
            drop(p);

            // From the snapshot (offset 7) plus the log after it.
            let p = open(&path, 1 << 30);
            assert_eq!(state(&p), before);
            // The last batch of producer 1 is still known as a duplicate.
            let retry = batch(1, 0, 3, 2, false);
            let v = validate_batches(&retry, usize::MAX).unwrap();
            let headers: Vec<_> = v.iter().map(|b| b.header).collect();
            assert!(matches!(
                p.producers.borrow().check(&headers),
                Ok(Check::Duplicate(_))
            ));
            drop(p);

            // Without any snapshot the full rebuild gives the same state.
            for (_, f) in snapshot::list(&path) {
                std::fs::remove_file(f).unwrap();
            }
            let p = open(&path, 1 << 30);
            assert_eq!(state(&p), before);
            drop(p);

            // A snapshot beyond the log end (the log lost its tail) is
            // dropped rather than trusted.
            let p = open(&path, 1 << 30);
            p.write_snapshot().unwrap();
            drop(p);
            std::fs::rename(snapshot::path(&path, 11), snapshot::path(&path, 50)).unwrap();
            let p = open(&path, 1 << 30);
            assert_eq!(state(&p), before);
            assert!(snapshot::list(&path).is_empty());
        });
    }

    #[test]
    fn a_snapshot_below_the_log_start_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        glommio::LocalExecutor::default().run(async move {
            let p = open(&path, 1 << 30);
            assert_eq!(produce(&p, &batch(1, 0, 0, 1, true)), Ok(0)); // open txn
            p.write_snapshot().unwrap(); // at offset 1, pid 1 open
            assert_eq!(p.write_marker(1, 0, true, 0).await, Ok(1));
            assert_eq!(produce(&p, &batch(-1, -1, -1, 1, false)), Ok(2));
            assert_eq!(produce(&p, &batch(-1, -1, -1, 1, false)), Ok(3));
            // Up to the high watermark: the segment holding the marker goes.
            assert_eq!(p.delete_records(4).unwrap(), 4);
            assert_eq!(p.last_stable_offset(), 4);
            drop(p);
            // The marker between the snapshot (1) and the log start (4) is
            // gone: the snapshot would reopen the committed transaction.
            let p = open(&path, 1 << 30);
            assert_eq!(p.txns.borrow().ongoing_count(), 0);
            assert_eq!(p.last_stable_offset(), 4);
        });
    }
}
