//! Retention and DeleteRecords: removing whole segments from the start of a
//! partition log and advancing its log start offset.
//!
//! Deleted segments are renamed `*.deleted` at once (readers holding the file
//! keep reading it) and removed later by the caller after
//! `file.delete.delay.ms`; recovery removes leftovers. A log start offset that
//! falls inside a segment (DeleteRecords) is persisted in the partition's
//! `log-start-offset` file (Kafka keeps one `log-start-offset-checkpoint` per
//! log dir; one file per partition keeps shards from sharing a file).
//!
//! The leader-epoch cache keeps the entry of the epoch holding the new log
//! start, with the log start as its start offset (Kafka
//! `truncateFromStartAsyncFlush`); its file is not rewritten for this
//! (opening the log applies the log start again), only at the next write
//! or at close.

use std::path::PathBuf;

use super::file_jobs::{run_or_queue, FileJob};
use super::log::PartitionLog;
use super::segment::Segment;
use super::StorageError;

pub use super::checkpoint::{read_log_start_checkpoint, LOG_START_CHECKPOINT};

/// Why segments were deleted (for logs and metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteReason {
    /// `retention.ms` passed since the segment's newest record.
    Time,
    /// The partition was larger than `retention.bytes`.
    Size,
    /// DeleteRecords moved the log start offset past the segment.
    LogStart,
}

/// What a retention pass or DeleteRecords removed.
#[derive(Debug, Default)]
pub struct Deleted {
    /// Files renamed to `*.deleted` (or to be, by queued file work), to
    /// remove after `file.delete.delay.ms`; a file that never existed
    /// (a segment without `.txnindex`) is among them then.
    pub files: Vec<PathBuf>,
    /// Number of segments removed.
    pub segments: usize,
    /// Bytes of `.log` removed.
    pub bytes: u64,
}

impl PartitionLog {
    /// Renames a removed segment's files to `*.deleted`, at once or, with
    /// deferred file work, as a queued job (`out.files` then names the
    /// targets, to unlink once that job ran); counts it in `out`.
    fn rename_deleted(&mut self, seg: &Segment, out: &mut Deleted) {
        if self.jobs.is_some() {
            let files = seg.deleted_names();
            out.files
                .extend(files.iter().map(|(_, target)| target.clone()));
            // Never fails when queued.
            let _ = run_or_queue(&mut self.jobs, FileJob::RenameDeleted { files });
        } else {
            out.files.extend(seg.rename_deleted());
        }
        out.segments += 1;
        out.bytes += seg.size();
    }

    /// Applies `retention.ms` (`retention_ms`, None = forever, against each
    /// segment's largest timestamp) and `retention.bytes` (None = no limit) at
    /// `now_ms`: deletes the oldest segments that are expired, oldest first,
    /// stopping at the first one that is not. The active segment is rolled
    /// first when it is itself expired and not empty (Kafka does the same),
    /// so an idle partition's data ages out too. Advances the log start
    /// offset. Gives what was removed.
    ///
    /// Precondition: no append is in flight (the shard's
    /// `Partition::apply_retention` calls it only then); a closed segment
    /// holding only reservations would count as empty and expired. Only
    /// segments that end at or below the high watermark are deleted (the
    /// next segment's base offset ≤ HW), as Kafka's
    /// `UnifiedLog.deletableSegments`, so the log start never passes it.
    pub fn apply_retention(
        &mut self,
        now_ms: i64,
        retention_ms: Option<i64>,
        retention_bytes: Option<i64>,
    ) -> Result<(Deleted, Option<DeleteReason>), StorageError> {
        if self.retention_rolls(now_ms, retention_ms) {
            self.roll()?;
        }
        // An empty closed segment (left by compaction) holds nothing to keep.
        let expired_by_time = |seg: &Segment| expired(seg, now_ms, retention_ms);
        let mut out = Deleted::default();
        let mut reason = None;
        let mut total: i64 = self.size_bytes() as i64;
        while let Some(first) = self.older.first() {
            // As Kafka's `UnifiedLog.deletableSegments`: only a segment that
            // ends at or below the high watermark may go, so no record a
            // follower or consumer may still need is removed.
            let upper = self.older.get(1).unwrap_or(&self.active).base_offset();
            if upper > self.high_watermark {
                break;
            }
            let by_time = expired_by_time(first);
            let by_size = retention_bytes.is_some_and(|max| total - first.size() as i64 >= max);
            if !by_time && !by_size {
                break;
            }
            reason.get_or_insert(if by_time {
                DeleteReason::Time
            } else {
                DeleteReason::Size
            });
            let seg = self.older.remove(0);
            total -= seg.size() as i64;
            self.rename_deleted(&seg, &mut out);
        }
        if out.segments > 0 {
            let next_base = self.older.first().unwrap_or(&self.active).base_offset();
            self.log_start_offset = self.log_start_offset.max(next_base);
            self.epochs.truncate_from_start(self.log_start_offset);
        }
        Ok((out, reason))
    }

    /// Whether [`Self::apply_retention`] at `now_ms` with `retention_ms`
    /// rolls the active segment first (every segment expired, the active
    /// one not empty): a shard has the next segment prepared before it.
    pub fn retention_rolls(&self, now_ms: i64, retention_ms: Option<i64>) -> bool {
        self.active.size() > 0
            && self.older.iter().all(|s| expired(s, now_ms, retention_ms))
            && expired(&self.active, now_ms, retention_ms)
    }

    /// Whether [`Self::delete_records_before`] to `offset` rolls the active
    /// segment first (the log start moves to the LEO of a non-empty active
    /// segment): a shard has the next segment prepared before it.
    pub fn delete_records_rolls(&self, offset: i64) -> bool {
        let target = if offset == -1 {
            self.high_watermark
        } else {
            offset
        };
        target > self.log_start_offset && target == self.log_end_offset && self.active.size() > 0
    }

    /// DeleteRecords: moves the log start offset to `offset` (-1 means the
    /// high watermark) and deletes the segments entirely below it.
    /// OFFSET_OUT_OF_RANGE when `offset` is past the high watermark. Gives the
    /// new log start offset (the low watermark) and what was removed.
    pub fn delete_records_before(&mut self, offset: i64) -> Result<(i64, Deleted), StorageError> {
        let (low, deleted, checkpoint) = self.delete_records_deferred(offset)?;
        if let Some(c) = checkpoint {
            c.write()?;
        }
        Ok((low, deleted))
    }

    /// As [`Self::delete_records_before`], but gives the log-start-offset
    /// checkpoint still to write (atomically, with fsyncs) instead of writing
    /// it, so a shard can write it off the reactor before it answers; None
    /// when the log start did not move.
    pub fn delete_records_deferred(
        &mut self,
        offset: i64,
    ) -> Result<(i64, Deleted, Option<CheckpointWrite>), StorageError> {
        let target = if offset == -1 {
            self.high_watermark
        } else {
            offset
        };
        if target < 0 || target > self.high_watermark {
            return Err(StorageError::OffsetOutOfRange {
                requested: offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: self.high_watermark,
            });
        }
        let mut out = Deleted::default();
        if target <= self.log_start_offset {
            return Ok((self.log_start_offset, out, None));
        }
        if target == self.log_end_offset && self.active.size() > 0 {
            self.roll()?;
        }
        // A segment still receiving the commits of appends in flight (the
        // one holding the LEO) stays.
        let pending = self.has_pending();
        let leo = self.log_end_offset;
        while self
            .older
            .first()
            .is_some_and(|s| s.next_offset() <= target && !(pending && s.next_offset() == leo))
        {
            let seg = self.older.remove(0);
            self.rename_deleted(&seg, &mut out);
        }
        self.log_start_offset = target;
        self.epochs.truncate_from_start(target);
        let checkpoint = CheckpointWrite {
            dir: self.dir.clone(),
            offset: target,
        };
        Ok((target, out, Some(checkpoint)))
    }
}

/// Whether `seg` is past `retention_ms` at `now_ms` (its newest record
/// older than that; an empty segment, left by compaction, holds nothing to
/// keep).
fn expired(seg: &Segment, now_ms: i64, retention_ms: Option<i64>) -> bool {
    retention_ms.is_some_and(|ms| {
        seg.size() == 0 || (seg.max_timestamp >= 0 && now_ms.saturating_sub(seg.max_timestamp) > ms)
    })
}

/// A log-start-offset checkpoint to write (see
/// [`PartitionLog::delete_records_deferred`]).
#[derive(Debug, Clone)]
pub struct CheckpointWrite {
    dir: std::path::PathBuf,
    offset: i64,
}

impl CheckpointWrite {
    /// Writes the checkpoint file atomically (temporary file, fsync,
    /// rename, directory fsync); blocking.
    pub fn write(self) -> std::io::Result<()> {
        super::write_offset_file(&self.dir, LOG_START_CHECKPOINT, self.offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::log::tests::{append_batches, cfg};
    use crate::storage::LogConfig;

    fn small() -> LogConfig {
        LogConfig {
            segment_bytes: 300,
            ..cfg()
        }
    }

    #[test]
    fn time_and_size_retention_delete_oldest_segments() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(dir.path(), small()).unwrap();
        for i in 0..6 {
            append_batches(&mut log, &[3], 1_000 * (i + 1), 50, 0);
        }
        let segs = log.segment_count();
        assert!(segs >= 3, "{segs}");
        // Nothing is older than 10 s at t = 5 s.
        let (d, _) = log.apply_retention(5_000, Some(10_000), None).unwrap();
        assert_eq!(d.segments, 0);
        // At t = 3.5 s + 1 ms with retention 1 s: segments whose newest record is
        // before 2.5 s go.
        let (d, why) = log.apply_retention(3_501, Some(1_000), None).unwrap();
        assert!(d.segments >= 1 && why == Some(DeleteReason::Time));
        assert!(log.log_start_offset() > 0);
        assert!(d
            .files
            .iter()
            .all(|f| f.to_string_lossy().ends_with(".deleted") && f.exists()));
        // Size: keep at most ~one segment.
        let (d, why) = log.apply_retention(3_501, None, Some(1)).unwrap();
        assert!(d.segments >= 1 && why == Some(DeleteReason::Size));
        assert_eq!(log.segment_count(), 1);
        // Reads below the new start are out of range; reopening keeps it.
        let start = log.log_start_offset();
        assert!(log.read(0, 1000, true).is_err());
        drop(log);
        let log = PartitionLog::open(dir.path(), small()).unwrap();
        assert_eq!(log.log_start_offset(), start);
    }

    #[test]
    fn expired_active_segment_is_rolled_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(dir.path(), cfg()).unwrap();
        append_batches(&mut log, &[5], 1_000, 10, 0);
        let (d, _) = log.apply_retention(100_000, Some(1_000), None).unwrap();
        assert_eq!(d.segments, 1);
        assert_eq!(log.log_start_offset(), 5);
        assert_eq!(log.log_end_offset(), 5);
    }

    #[test]
    fn delete_records_moves_log_start_and_checkpoints_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(dir.path(), small()).unwrap();
        for _ in 0..6 {
            append_batches(&mut log, &[3], 1_000, 50, 0);
        }
        assert!(log.delete_records_before(1_000).is_err());
        let (low, d) = log.delete_records_before(7).unwrap();
        assert_eq!(low, 7);
        assert!(d.segments >= 1);
        assert_eq!(log.log_start_offset(), 7);
        assert!(log.read(6, 1000, true).is_err());
        assert!(log.read(7, 1000, true).is_ok());
        drop(log);
        let log = PartitionLog::open(dir.path(), small()).unwrap();
        assert_eq!(log.log_start_offset(), 7);
        let mut log = log;
        let (low, _) = log.delete_records_before(-1).unwrap();
        assert_eq!(low, log.high_watermark());
    }
}
