//! One partition as its owner shard holds it: the log, the append signal that
//! wakes long-poll fetches, and the flush policy with group commit.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use futures_channel::oneshot;
use uuid::Uuid;

use super::notify::Notify;
use crate::cluster::topic_config::TopicSettings;
use crate::storage::cleaner::{CleanStats, CompactionConfig};
use crate::storage::{AppendResult, PartitionLog, ReadResult, StorageError, ValidatedBatch};
use crate::txn::producer_state::ProducerStateMap;

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
        let mut producers = ProducerStateMap::default();
        match log.batch_headers() {
            Ok(headers) => {
                for h in &headers {
                    producers.update(h, h.base_offset);
                }
            }
            Err(e) => log::warn!("{topic}-{index}: cannot rebuild producer state: {e}"),
        }
        Partition {
            topic,
            index,
            topic_id,
            leader_epoch: 0,
            log: RefCell::new(log),
            appended: Rc::new(Notify::default()),
            settings: RefCell::new(settings),
            producers: RefCell::new(producers),
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

    /// Appends validated batches (see `storage::PartitionLog::append`), wakes
    /// waiting fetches and applies the flush policy. The returned flag says
    /// whether the flush policy requires an fdatasync before acks=all may be
    /// answered; call [`Partition::wait_flushed`] with `last_offset + 1` then.
    pub fn append(
        self: &Rc<Self>,
        records: &[u8],
        batches: &[ValidatedBatch],
        now_ms: i64,
    ) -> Result<(AppendResult, bool), StorageError> {
        let (result, rolled_from) = {
            let mut log = self.log.borrow_mut();
            let before = log.active_log_file();
            let r = log.append(records, batches, self.leader_epoch, now_ms)?;
            let mut producers = self.producers.borrow_mut();
            let mut first = r.base_offset;
            for b in batches {
                producers.update(&b.header, first);
                first += b.header.last_offset_delta as i64 + 1;
            }
            let after = log.active_log_file();
            (r, (!Arc::ptr_eq(&before, &after)).then_some(before))
        };
        self.appended.notify_all();
        let (flush_messages, flush_ms) = {
            let s = self.settings.borrow();
            (s.flush_messages, s.flush_ms)
        };
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
        let stats = self.log.borrow_mut().compact(now_ms, cfg, max_segments)?;
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
        remove_later(deleted.files, self.settings().file_delete_delay_ms);
        Ok(low)
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
