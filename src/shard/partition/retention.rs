//! The partition's log start moving up and its closed segments rewritten:
//! retention, compaction passes and DeleteRecords. Removed segments'
//! files are renamed on the shard's I/O thread and unlinked later on its
//! background thread (`partition/file_work.rs`), never on the reactor.

use super::file_work::remove_later;
use super::*;

impl Partition {
    /// Runs retention (`retention.ms`, `retention.bytes`) when the topic's
    /// `cleanup.policy` includes `delete`; removed segments' files are
    /// renamed `*.deleted` on the I/O thread and unlinked after
    /// `file.delete.delay.ms` on the background thread. Gives the number
    /// of segments removed.
    pub async fn apply_retention(self: &Rc<Self>, now_ms: i64) -> Result<usize, StorageError> {
        let s = self.settings();
        if !s.delete || (s.retention_ms.is_none() && s.retention_bytes.is_none()) {
            return Ok(0);
        }
        if self.log.borrow().retention_rolls(now_ms, s.retention_ms) {
            // An idle partition's expired active segment is rolled first:
            // into a segment prepared off the reactor.
            self.segment_ready().await;
        }
        if self.log.borrow().has_pending() || self.compacting.get() {
            // Appends in flight: the next round runs it.
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
        // The renames (queued file work) first, the unlinks after the delay.
        let renamed = self.submit_file_work();
        remove_later(deleted.files, s.file_delete_delay_ms, renamed);
        Ok(n)
    }

    /// One compaction pass (at most `max_segments` segments rewritten) when
    /// `cleanup.policy` includes `compact`: planned here, run on a thread
    /// of its own (it reads and rewrites whole segments and fsyncs them), the
    /// rewritten segments put in place here. Appends and fetches go on
    /// meanwhile; retention and DeleteRecords wait for it. Gives what was
    /// done; `Io`/`Inconsistent` (KAFKA_STORAGE_ERROR) when the pass failed.
    pub async fn compact(
        self: &Rc<Self>,
        now_ms: i64,
        max_segments: usize,
    ) -> Result<CleanStats, StorageError> {
        if self.retired.get() {
            return Ok(CleanStats::default());
        }
        if self.log.borrow().has_pending() || self.compacting.get() {
            // Appends in flight, or a pass running: the next round runs it.
            return Ok(CleanStats::default());
        }
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
        // `PartitionLog::compaction_plan`).
        let (stable, aborted) = {
            let t = self.txns.borrow();
            let hw = self.log.borrow().high_watermark();
            (
                t.first_unstable_offset().map_or(hw, |o| o.min(hw)),
                t.aborted().to_vec(),
            )
        };
        let Some(job) =
            self.log
                .borrow()
                .compaction_plan(now_ms, cfg, max_segments, stable, &aborted)
        else {
            return Ok(CleanStats::default());
        };
        self.compacting.set(true);
        let name = format!("{}-{}-cleaner", self.topic, self.index);
        let done = crate::shard::io::on_new_thread(name, move || job.run()).await;
        let stats = match done {
            Ok(Ok(done)) => {
                let (stats, replaced) = self.log.borrow_mut().apply_compaction(done);
                // Closing the old segments frees the disk of the files the
                // pass replaced or deleted: on the background thread.
                if !replaced.is_empty() {
                    let close = crate::shard::io::run_in_background(move || drop(replaced));
                    crate::shard::stall::spawn_local("compacted segments' close", async move {
                        if let Err(e) = close.await {
                            log::warn!("compacted segments not closed off the shard: {e}");
                        }
                    })
                    .detach();
                }
                Ok(stats)
            }
            Ok(Err(e)) => Err(e),
            Err(e) => Err(StorageError::Io(e)),
        };
        self.compacting.set(false);
        self.compaction_done.notify_all();
        let stats = stats?;
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
    /// watermark); gives the new low watermark. Waits for a running
    /// compaction pass first (both change the closed segments). Removed
    /// segments go as retention's do. `Io` on a partition removed from
    /// this broker.
    pub async fn delete_records(self: &Rc<Self>, offset: i64) -> Result<i64, StorageError> {
        self.refuse_if_retired()?;
        if self.log.borrow().delete_records_rolls(offset) {
            // The log start moves to the LEO: the active segment is rolled
            // first, into a segment prepared off the reactor.
            self.segment_ready().await;
        }
        while self.compacting.get() {
            let g = self.compaction_done.generation();
            crate::shard::notify::any_changed(vec![(self.compaction_done.clone(), g)]).await;
        }
        self.refuse_if_retired()?;
        let (low, deleted, checkpoint) = self.log.borrow_mut().delete_records_deferred(offset)?;
        if deleted.segments > 0 {
            log::info!(
                "{}-{}: DeleteRecords to offset {offset} deleted {} segment(s), {} bytes; log start offset now {low}",
                self.topic,
                self.index,
                deleted.segments,
                deleted.bytes
            );
        }
        self.txns.borrow_mut().drop_aborted_before(low);
        let renamed = self.submit_file_work();
        remove_later(deleted.files, self.settings().file_delete_delay_ms, renamed);
        if let Some(c) = checkpoint {
            // Durable before the answer, written off the reactor.
            glommio::executor()
                .spawn_blocking(move || c.write())
                .await?;
        }
        Ok(low)
    }
}
