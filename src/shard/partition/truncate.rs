//! The owner's side of log truncation and of the leader-epoch cache: a
//! follower whose log holds batches the new leader does not have cuts them
//! (`truncate_to`, after asking the leader with OffsetForLeaderEpoch), and
//! OffsetForLeaderEpoch is answered from the log's leader-epoch cache.

use std::rc::Rc;

use super::{rebuild_state, snapshot, Partition};
use crate::storage::{Inconsistency, StorageError};

impl Partition {
    /// Takes an offset; truncates the log so its LEO is at most `offset`
    /// (whole batches; `PartitionLog::truncate_to`, Kafka
    /// `UnifiedLog.truncateTo`) and gives the new LEO. Then the producer
    /// and transaction state are rebuilt for the shorter log (from the
    /// newest producer-state snapshot at or below the new LEO, the
    /// truncation having deleted those above, plus the batches after it:
    /// a cut batch is no longer a duplicate, its producer's next sequence is
    /// the cut batch's first, a transaction opened in the cut part no longer
    /// holds the LSO), the durable offset is brought back to the new LEO if
    /// past it, and waiting fetches are woken.
    ///
    /// First waits until the shard's I/O thread ran the file work queued
    /// before (a roll's renames, checkpoints: the truncation must not race
    /// them); then runs on the calling thread, file operations included
    /// (truncation is rare: a follower after a leader change), but for its
    /// leader-epoch checkpoint, queued in order on the I/O thread.
    ///
    /// Errors (each KAFKA_STORAGE_ERROR, 56): appends reserved and not yet
    /// committed → `Inconsistent` (`TruncateWithPendingAppends`), a
    /// compaction pass running → `Inconsistent`
    /// (`TruncateDuringCompaction`); the caller truncates again once they
    /// are done; `offset` < 0 → `OffsetOutOfRange` (1); an I/O failure, or
    /// a partition removed from this broker → `Io` (the log then takes no
    /// appends until restart).
    pub async fn truncate_to(self: &Rc<Self>, offset: i64) -> Result<i64, StorageError> {
        self.cut(offset, false).await
    }

    /// Takes an offset; deletes the whole log and starts it again, empty,
    /// at `offset` (Kafka `truncateFullyAndStartAt`: a follower behind its
    /// leader's log start offset); then as [`Self::truncate_to`]. Errors as
    /// it.
    pub async fn truncate_fully_and_start_at(
        self: &Rc<Self>,
        offset: i64,
    ) -> Result<i64, StorageError> {
        self.cut(offset, true).await
    }

    async fn cut(self: &Rc<Self>, offset: i64, fully: bool) -> Result<i64, StorageError> {
        self.refuse_if_retired()?;
        crate::shard::io::io_barrier().await?;
        // No await from here on: the barrier holds for what follows.
        self.refuse_if_retired()?;
        if self.compacting.get() {
            return Err(StorageError::Inconsistent {
                path: Some(self.log.borrow().dir().to_path_buf()),
                what: Inconsistency::TruncateDuringCompaction { offset },
            });
        }
        let before = self.log.borrow().log_end_offset();
        let leo = if fully {
            self.log.borrow_mut().restart_at(offset)
        } else {
            self.log.borrow_mut().truncate_to(offset)
        };
        // The checkpoint it queued, if any, in order after earlier ones.
        let _ = self.submit_file_work();
        let leo = leo?;
        if leo == before && !fully {
            return Ok(leo);
        }
        self.truncations.set(self.truncations.get() + 1);
        let (producers, txns) = rebuild_state(&self.topic, self.index, &self.log.borrow());
        *self.producers.borrow_mut() = producers;
        *self.txns.borrow_mut() = txns;
        if self.flushed_offset.get() > leo {
            self.flushed_offset.set(leo);
        }
        self.flush_after_truncation();
        self.appended.notify_all();
        Ok(leo)
    }

    /// Takes the truncation count a background producer-state snapshot was
    /// captured at and the snapshot's offset; once its write is done,
    /// removes it when the log was truncated meanwhile (its state may hold
    /// batches that are gone; start-up then replays more of the log).
    pub(super) fn drop_snapshot_if_truncated(&self, truncations: u64, offset: i64) {
        if self.truncations.get() == truncations {
            return;
        }
        let path = snapshot::path(self.log.borrow().dir(), offset);
        match std::fs::remove_file(&path) {
            Ok(()) => log::debug!(
                "{}: snapshot older than a truncation removed",
                path.display()
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => log::warn!("cannot remove {}: {e}", path.display()),
        }
    }

    /// Takes the leader epoch this broker now leads the partition in; adds
    /// its entry (starting at the log end) to the leader-epoch cache before
    /// any append of that epoch, as Kafka's `Partition.makeLeader` does
    /// (see `PartitionLog::assign_epoch_start_offset`); gives whether it
    /// was added. The checkpoint is written on the shard's I/O thread,
    /// ahead of the epoch's first write (a failure there stops appends and
    /// the broker, see `partition/file_work.rs`); on a log without deferred
    /// file work, on the calling thread. Errors with the failed write
    /// (`Io`, KAFKA_STORAGE_ERROR).
    pub fn assign_epoch_start_offset(self: &Rc<Self>, epoch: i32) -> Result<bool, StorageError> {
        let added = self.log.borrow_mut().assign_epoch_start_offset(epoch);
        let _ = self.submit_file_work();
        added
    }

    /// Gives the latest leader epoch the log holds data of, None when it
    /// holds none (see `PartitionLog::latest_epoch`).
    pub fn latest_epoch(&self) -> Option<i32> {
        self.log.borrow().latest_epoch()
    }

    /// OffsetForLeaderEpoch: takes a leader epoch; gives (epoch, end
    /// offset) by Kafka's `LeaderEpochFileCache.endOffsetFor` rules, the
    /// latest epoch ending at the LEO; None for -1, an epoch above the
    /// latest, or an empty cache (answered -1/-1; see
    /// `PartitionLog::end_offset_for_epoch`).
    pub fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, i64)> {
        self.log.borrow().end_offset_for_epoch(epoch)
    }
}

#[cfg(test)]
#[path = "truncate_tests.rs"]
mod tests;
