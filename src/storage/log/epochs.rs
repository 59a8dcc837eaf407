//! The leader-epoch cache of a [`PartitionLog`]: loading it when the log
//! opens, and the lookups OffsetForLeaderEpoch answers from (Kafka
//! `UnifiedLog.latestEpoch`, `endOffsetForEpoch`). The entries are added by
//! the appends (`log/append.rs`), cut by truncation (`log/truncate.rs`) and
//! by the log start moving up (`retention.rs`).

use super::*;
use crate::storage::epoch_cache;

impl PartitionLog {
    /// Loads the leader-epoch cache when the log opens (after recovery, with
    /// the log start and end known): from `leader-epoch-checkpoint`, or,
    /// when it is missing or unreadable (a log written before the cache
    /// existed, a damaged file), rebuilt from the batch headers: each batch
    /// whose partitionLeaderEpoch (>= 0) is above the latest so far adds
    /// (epoch, base offset). After an unclean shutdown the active
    /// segment's batches are added the same way to a loaded cache (Kafka
    /// `LogSegment.recover`), for an epoch whose checkpoint write a crash
    /// lost. Then entries starting at or past the LEO are dropped
    /// (recovery cut the tail) and the log start is applied (see
    /// `LeaderEpochCache::truncate_from_start`). The file is written when
    /// this changed anything (a rebuilt cache, when not empty). Errors with
    /// the I/O failure of a header read or of the write.
    pub(super) fn load_epoch_cache(&mut self, clean_shutdown: bool) -> Result<(), StorageError> {
        let loaded = match epoch_cache::read(&self.dir) {
            Ok(found) => found,
            Err(e) => {
                ::log::warn!("{e}; rebuilding the leader-epoch cache from the log");
                None
            }
        };
        let mut changed = false;
        match loaded {
            Some(entries) => {
                self.epochs = LeaderEpochCache::new(&self.dir, entries);
                if !clean_shutdown {
                    let epochs = &mut self.epochs;
                    self.active.for_each_header(|h| {
                        changed |= epochs.assign(h.partition_leader_epoch, h.base_offset);
                    })?;
                }
            }
            None => {
                self.epochs = LeaderEpochCache::new(&self.dir, Vec::new());
                let epochs = &mut self.epochs;
                for seg in self.older.iter().chain(std::iter::once(&self.active)) {
                    seg.for_each_header(|h| {
                        epochs.assign(h.partition_leader_epoch, h.base_offset);
                    })?;
                }
                changed = !self.epochs.entries().is_empty();
            }
        }
        changed |= self.epochs.truncate_from_end(self.log_end_offset);
        changed |= self.epochs.truncate_from_start(self.log_start_offset);
        if changed {
            self.write_epochs()?;
        }
        Ok(())
    }

    /// Takes a leader epoch this replica now leads in (Kafka
    /// `maybeAssignEpochStartOffset`, called by `Partition.makeLeader`);
    /// adds (epoch, the offset the next reservation gets) to the
    /// leader-epoch cache when the epoch is newer than its latest, and
    /// writes the checkpoint on the calling thread (queued, in order, with
    /// deferred file work); gives whether it was added. With the entry in place before the new leader's first append,
    /// a follower asking for the end of an older epoch gets the new
    /// leader's log end offset at its election, not "undefined". Errors
    /// with the failed write (`Io`, KAFKA_STORAGE_ERROR; the cache is left
    /// as it was).
    pub fn assign_epoch_start_offset(&mut self, epoch: i32) -> Result<bool, StorageError> {
        let jobs = &mut self.jobs;
        Ok(self
            .epochs
            .assign_durably([(epoch, self.next_offset)], |c| {
                crate::storage::file_jobs::run_or_queue(
                    jobs,
                    crate::storage::file_jobs::FileJob::EpochCheckpoint(c),
                )
            })?)
    }

    /// Gives the latest leader epoch the log holds data of (the largest
    /// epoch of its leader-epoch cache), None when it holds none (an empty
    /// log, or only batches without an epoch).
    pub fn latest_epoch(&self) -> Option<i32> {
        self.epochs.latest_epoch()
    }

    /// OffsetForLeaderEpoch (KIP-101, KIP-320): takes a leader epoch; gives
    /// (epoch, end offset) by Kafka's `LeaderEpochFileCache.endOffsetFor`
    /// rules with the LEO as the latest epoch's end:
    /// - `epoch` is the latest epoch: (epoch, LEO);
    /// - `epoch` is below the latest: (the largest cached epoch <= `epoch`,
    ///   the start offset of the first cached epoch above `epoch`); when
    ///   `epoch` is below every cached epoch, (`epoch`, the first entry's
    ///   start offset), as Kafka's code answers;
    /// - `epoch` is -1, above the latest, or the cache is empty: None
    ///   (Kafka's UNDEFINED_EPOCH -1 with UNDEFINED_EPOCH_OFFSET -1).
    pub fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, i64)> {
        self.epochs.end_offset_for(epoch, self.log_end_offset)
    }

    /// Gives the leader-epoch cache's entries as (epoch, start offset),
    /// oldest first (tests, diagnostics).
    pub fn epoch_entries(&self) -> Vec<(i32, i64)> {
        self.epochs
            .entries()
            .iter()
            .map(|e| (e.epoch, e.start_offset))
            .collect()
    }
}
