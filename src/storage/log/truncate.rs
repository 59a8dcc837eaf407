//! Truncation of a [`PartitionLog`] at its end (Kafka `UnifiedLog.truncateTo`
//! and `truncateFullyAndStartAt`): what a follower does when its log holds
//! batches the new leader does not have (found with OffsetForLeaderEpoch).
//! Truncation is rare (a leader change), so its file operations run on the
//! calling thread.

use super::*;
use crate::storage::checkpoint::{
    CLEANER_CHECKPOINT, LOG_START_CHECKPOINT, PRODUCER_SNAPSHOT_SUFFIX,
};
use crate::storage::segment::parse_segment_file_name;
use crate::storage::Inconsistency;

impl PartitionLog {
    /// Takes an offset; cuts the log so that its LEO is at most `offset`
    /// and gives the new LEO (Kafka `UnifiedLog.truncateTo`):
    ///
    /// - whole batches only: the log is cut at the start of the batch
    ///   holding `offset`, so a batch with base offset < `offset` <= last
    ///   offset goes entirely (the new LEO is then its base offset); an
    ///   offset between batches (a gap left by compaction) is the new LEO
    ///   itself;
    /// - the segments whose base offset is at or above the new LEO are
    ///   deleted with all their files (`.log`, `.index`, `.timeindex`,
    ///   `.txnindex`), newest first, so a crash midway leaves a shorter,
    ///   consistent log; the segment holding the cut is cut there (its
    ///   `.log` and both indexes, see `Segment::truncate_tail`) and becomes
    ///   the active segment; its `.txnindex` loses the entries whose marker
    ///   is cut;
    /// - producer-state snapshots (`<offset>.snapshot`) above the new LEO
    ///   are deleted, as is every leader-epoch entry starting at or past it
    ///   (the checkpoint is written at once); a cleaner checkpoint past it
    ///   comes back to it; the high watermark becomes min(HW, LEO);
    /// - `offset` at or below the log start offset (or a cut that would
    ///   leave nothing above it): everything is deleted and the log starts
    ///   again at that offset (Kafka `truncateFullyAndStartAt`): an empty
    ///   active segment with that base offset, log start = LEO = HW = it,
    ///   an empty leader-epoch cache, no producer-state snapshot;
    /// - `offset` at or past the LEO changes nothing (but leader-epoch
    ///   entries starting at or past the LEO, as Kafka).
    ///
    /// Runs on the calling thread, files included (renames, unlinks,
    /// truncations, the checkpoint fsyncs): truncation is a rare event, a
    /// follower's after a leader change. Fetches holding regions of cut
    /// files read short; deleted files stay readable to them.
    ///
    /// Errors: reserved appends not yet committed → `Inconsistent`
    /// (`TruncateWithPendingAppends`; truncate once they are); `offset` < 0
    /// → `OffsetOutOfRange`; an I/O failure → `Io` (KAFKA_STORAGE_ERROR),
    /// after which the log takes no appends until restart (recovery then
    /// cuts what was left half done).
    pub fn truncate_to(&mut self, offset: i64) -> Result<i64, StorageError> {
        self.check_truncatable(offset)?;
        if offset >= self.log_end_offset {
            if self.epochs.truncate_from_end(self.log_end_offset) {
                self.write_epochs()?;
            }
            return Ok(self.log_end_offset);
        }
        let r = if offset <= self.log_start_offset {
            self.truncate_fully_and_start_at(offset)
        } else {
            self.cut_at(offset)
        };
        if let Err(e) = &r {
            ::log::error!(
                "{}: truncation to {offset} failed: {e}; the partition takes no appends until restart",
                self.dir.display()
            );
            self.failed
                .get_or_insert_with(|| format!("truncation to {offset} failed: {e}"));
        }
        r
    }

    /// Deletes every segment and starts the log again, empty, at `offset`
    /// (Kafka `truncateFullyAndStartAt`: a follower whose LEO is below its
    /// leader's log start offset); gives `offset`. Files as
    /// [`Self::truncate_to`]; errors as it (pending appends, `offset` < 0,
    /// I/O, after which the log takes no appends until restart).
    pub fn restart_at(&mut self, offset: i64) -> Result<i64, StorageError> {
        self.check_truncatable(offset)?;
        let r = self.truncate_fully_and_start_at(offset);
        if let Err(e) = &r {
            self.failed
                .get_or_insert_with(|| format!("restart at {offset} failed: {e}"));
        }
        r
    }

    /// Refuses a truncation to `offset` while appends are reserved and not
    /// committed (`Inconsistent`) or for a negative offset
    /// (`OffsetOutOfRange`).
    fn check_truncatable(&self, offset: i64) -> Result<(), StorageError> {
        if self.has_pending() {
            return Err(StorageError::Inconsistent {
                path: Some(self.dir.clone()),
                what: Inconsistency::TruncateWithPendingAppends {
                    offset,
                    log_end_offset: self.log_end_offset,
                    next_offset: self.next_offset,
                },
            });
        }
        if offset < 0 {
            return Err(self.out_of_range(offset));
        }
        Ok(())
    }

    /// [`Self::truncate_to`] for log start < `offset` < LEO.
    fn cut_at(&mut self, offset: i64) -> Result<i64, StorageError> {
        // The segment holding `offset`, where the batch holding it starts,
        // and the new LEO.
        let segs: Vec<&Segment> = self.segments().collect();
        let p = segs
            .partition_point(|s| s.base_offset() <= offset)
            .saturating_sub(1);
        let Some(seg) = segs.get(p) else {
            return Err(self.out_of_range(offset));
        };
        let (position, new_end) = match seg.find_batch(offset)? {
            Some((pos, h)) => (pos, offset.min(h.base_offset)),
            None => (seg.size(), offset),
        };
        if new_end <= self.log_start_offset {
            return self.truncate_fully_and_start_at(new_end);
        }
        // The segment kept last: the last one starting below the new LEO
        // (the one holding `offset`, or the one before it when the cut is
        // that one's first byte). Cut where the batch starts, or, for the
        // one before, at its end.
        let keep = segs.partition_point(|s| s.base_offset() < new_end);
        let cut_position = if keep == p + 1 {
            position
        } else {
            segs.get(keep.saturating_sub(1)).map_or(0, |s| s.size())
        };
        drop(segs);

        let mut removed = Vec::new();
        while self.active.base_offset() >= new_end {
            let Some(prev) = self.older.pop() else {
                return Err(self.out_of_range(offset));
            };
            let gone = std::mem::replace(&mut self.active, prev);
            delete_segment(&gone, &mut removed)?;
        }
        self.active.truncate_tail(cut_position, new_end)?;
        remove_files(removed);
        self.cut_txn_index(new_end)?;
        self.remove_producer_snapshots(|o| o > new_end);
        if self.epochs.truncate_from_end(new_end) || self.epochs.is_dirty() {
            self.write_epochs()?;
        }
        self.pull_back_cleaner_checkpoint(new_end)?;
        self.log_end_offset = new_end;
        self.next_offset = new_end;
        self.active_reserved = self.active.size();
        self.high_watermark = self.high_watermark.min(new_end);
        ::log::info!(
            "{}: truncated to offset {new_end} (asked {offset}); active segment {}",
            self.dir.display(),
            self.active.base_offset()
        );
        Ok(new_end)
    }

    /// Deletes every segment and starts the log again at `offset` (Kafka
    /// `truncateFullyAndStartAt`); gives `offset`.
    fn truncate_fully_and_start_at(&mut self, offset: i64) -> Result<i64, StorageError> {
        let mut removed = Vec::new();
        delete_segment(&self.active, &mut removed)?;
        while let Some(seg) = self.older.pop() {
            delete_segment(&seg, &mut removed)?;
        }
        self.active = self.new_segment(offset)?;
        remove_files(removed);
        self.remove_producer_snapshots(|_| true);
        self.epochs.clear();
        self.write_epochs()?;
        if self.dir.join(LOG_START_CHECKPOINT).exists() {
            crate::storage::write_offset_file(&self.dir, LOG_START_CHECKPOINT, offset)?;
        }
        self.pull_back_cleaner_checkpoint(offset)?;
        self.log_start_offset = offset;
        self.log_end_offset = offset;
        self.next_offset = offset;
        self.high_watermark = offset;
        self.active_reserved = 0;
        ::log::info!(
            "{}: truncated fully; the log starts again at offset {offset}",
            self.dir.display()
        );
        Ok(offset)
    }

    /// Drops the active segment's `.txnindex` entries whose marker is at or
    /// past `end` (the file is removed when none is left).
    fn cut_txn_index(&self, end: i64) -> Result<(), StorageError> {
        let path = self.dir.join(segment_file_name(
            self.active.base_offset(),
            TXN_INDEX_SUFFIX,
        ));
        let Some(entries) = read_txn_index(&path)? else {
            return Ok(());
        };
        let kept: Vec<AbortedTxn> = entries
            .iter()
            .filter(|a| a.last_offset < end)
            .copied()
            .collect();
        if kept.len() == entries.len() {
            return Ok(());
        }
        if kept.is_empty() {
            std::fs::remove_file(&path)?;
        } else {
            write_txn_index(&path, &kept)?;
        }
        Ok(())
    }

    /// Removes the producer-state snapshots (`<offset>.snapshot`) whose
    /// offset `drop` selects; a failed removal is logged (the partition
    /// drops a snapshot above the log end at start-up too).
    fn remove_producer_snapshots(&self, drop: impl Fn(i64) -> bool) {
        let suffix = PRODUCER_SNAPSHOT_SUFFIX.trim_start_matches('.');
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in dir.flatten() {
            let name = entry.file_name();
            let Some((offset, s)) = name.to_str().and_then(parse_segment_file_name) else {
                continue;
            };
            if s == suffix && drop(offset) {
                if let Err(e) = std::fs::remove_file(entry.path()) {
                    ::log::warn!("cannot remove {}: {e}", entry.path().display());
                }
            }
        }
    }

    /// Brings the cleaner checkpoint (first dirty offset) back to `end`
    /// when it is past it.
    fn pull_back_cleaner_checkpoint(&self, end: i64) -> Result<(), StorageError> {
        let past = crate::storage::read_offset_file(&self.dir, CLEANER_CHECKPOINT)
            .is_some_and(|o| o > end);
        if past {
            crate::storage::write_offset_file(&self.dir, CLEANER_CHECKPOINT, end)?;
        }
        Ok(())
    }
}

/// Renames a segment's files for deletion (`Segment::rename_deleted`),
/// adding them to `removed`; a `.log` left in place is an `Io` error (it
/// would come back at the next start).
fn delete_segment(seg: &Segment, removed: &mut Vec<PathBuf>) -> Result<(), StorageError> {
    removed.extend(seg.rename_deleted());
    if seg.log_path().exists() {
        return Err(StorageError::Io(std::io::Error::other(format!(
            "{}: not renamed for deletion",
            seg.log_path().display()
        ))));
    }
    Ok(())
}

/// Unlinks files renamed for deletion; a failure is logged (recovery
/// removes `.deleted` leftovers).
fn remove_files(files: Vec<PathBuf>) {
    for f in files {
        if let Err(e) = std::fs::remove_file(&f) {
            ::log::warn!("cannot remove {}: {e}", f.display());
        }
    }
}

#[cfg(test)]
#[path = "truncate_tests.rs"]
mod tests;
