//! The file work of a [`crate::storage::PartitionLog`] that may block in
//! the kernel and that its owner runs off the shard's reactor, in order:
//! the leader-epoch checkpoint, `.txnindex` appends, what a segment roll
//! does to files (the old segment's last time-index entry and released
//! preallocation, the new segment's names), and the renames of deleted
//! segments.
//!
//! A log opened on a shard is switched to deferred file work
//! (`PartitionLog::defer_file_work`): these jobs then queue in the log, in
//! the order the log made them, and the shard takes them after each call
//! (`PartitionLog::take_file_jobs`) and hands them to its I/O thread,
//! which runs jobs in submission order. So a job queued before an append's
//! write lands before it (a new epoch's checkpoint before the epoch's first
//! batch, a new segment's names before its first record), and two
//! checkpoints of one partition land in the order they were taken. Without
//! deferral (tools, tests, a log being opened) each job runs at once on the
//! calling thread, as before.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;

use super::epoch_cache::EpochCheckpointWrite;
use super::index::IndexWrite;
use super::segment::{name_prepared_segment, rename_for_deletion};
use super::txn_index::AbortedTxn;

/// One piece of file work of a partition log (see the module docs).
#[derive(Debug)]
pub enum FileJob {
    /// Replace `leader-epoch-checkpoint` (temporary file, fsync, rename,
    /// directory fsync).
    EpochCheckpoint(EpochCheckpointWrite),
    /// Append one 34-byte entry to a `.txnindex` (created if missing; not
    /// fsynced: the producer-state snapshot fsyncs it before it covers it).
    TxnIndexAppend {
        /// The `.txnindex` of the segment holding the ABORT marker.
        path: PathBuf,
        /// The aborted transaction.
        entry: AbortedTxn,
    },
    /// A rolled segment stops being the active one: its final time-index
    /// entry (Kafka `onBecomeInactiveSegment`) and the release of disk
    /// reserved past its data (`preallocate`).
    FinishSegment {
        /// The final `.timeindex` entry, when there is one.
        time_entry: Option<IndexWrite>,
        /// The `.log` and the length to cut it to, when disk was reserved.
        release: Option<(Arc<File>, u64)>,
    },
    /// Give a prepared segment's files the names of its base offset (the
    /// roll that swapped it in); the directory's fsync follows off the
    /// append path (see `segment::name_prepared_segment`).
    NameSegment {
        /// The partition directory.
        dir: PathBuf,
        /// The segment's base offset.
        base_offset: i64,
    },
    /// Rename deleted segments' files to `*.deleted` (retention,
    /// DeleteRecords); they are unlinked after `file.delete.delay.ms`.
    RenameDeleted {
        /// (file, target) pairs.
        files: Vec<(PathBuf, PathBuf)>,
    },
}

impl FileJob {
    /// Names the job for log lines.
    pub fn what(&self) -> &'static str {
        match self {
            FileJob::EpochCheckpoint(_) => "leader-epoch checkpoint",
            FileJob::TxnIndexAppend { .. } => ".txnindex entry",
            FileJob::FinishSegment { .. } => "rolled segment's last index entry",
            FileJob::NameSegment { .. } => "new segment's file names",
            FileJob::RenameDeleted { .. } => "deleted segments' renames",
        }
    }

    /// The partition directory whose entries this job changes and that a
    /// flush must fsync before it counts the new segment's records as
    /// flushed: a roll's renames (`NameSegment`); None for the others.
    pub fn names_segment_in(&self) -> Option<&std::path::Path> {
        match self {
            FileJob::NameSegment { dir, .. } => Some(dir),
            FileJob::EpochCheckpoint(_)
            | FileJob::TxnIndexAppend { .. }
            | FileJob::FinishSegment { .. }
            | FileJob::RenameDeleted { .. } => None,
        }
    }

    /// Whether a failure of this job leaves the log unsafe to append to:
    /// a checkpoint not written (the epoch's start could be lost at a
    /// crash) or a new segment left under its prepared names (its records
    /// would not be found at the next start). The other jobs' failures
    /// only log, as before they moved off the shard (indexes are rebuilt,
    /// a renamed file that stays is deleted later).
    pub fn is_critical(&self) -> bool {
        match self {
            FileJob::EpochCheckpoint(_) | FileJob::NameSegment { .. } => true,
            FileJob::TxnIndexAppend { .. }
            | FileJob::FinishSegment { .. }
            | FileJob::RenameDeleted { .. } => false,
        }
    }

    /// Runs the job on the calling thread (blocking). Errors with the I/O
    /// failure; a `RenameDeleted` logs the renames that fail and never
    /// errors.
    pub fn run(self) -> io::Result<()> {
        match self {
            FileJob::EpochCheckpoint(c) => c.write(),
            FileJob::TxnIndexAppend { path, entry } => {
                let mut f = OpenOptions::new().create(true).append(true).open(path)?;
                f.write_all(&entry.encode())
            }
            FileJob::FinishSegment {
                time_entry,
                release,
            } => {
                if let Some(w) = time_entry {
                    w.write_now()?;
                }
                if let Some((file, len)) = release {
                    file.set_len(len)?;
                }
                Ok(())
            }
            FileJob::NameSegment { dir, base_offset } => name_prepared_segment(&dir, base_offset),
            FileJob::RenameDeleted { files } => {
                rename_for_deletion(&files);
                Ok(())
            }
        }
    }
}

/// Takes the log's job queue (None: not deferred) and a job; queues it, or
/// runs it at once when the log does not defer its file work. Errors with
/// the failure of a job run at once.
pub(crate) fn run_or_queue(queue: &mut Option<Vec<FileJob>>, job: FileJob) -> io::Result<()> {
    match queue {
        Some(q) => {
            q.push(job);
            Ok(())
        }
        None => job.run(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::segment::{prepared_path, segment_file_name, Segment};

    #[test]
    fn a_prepared_segment_takes_its_names_and_a_queue_defers() {
        let dir = tempfile::tempdir().unwrap();
        let mut seg = Segment::create_prepared(dir.path(), 1024, Some(4096)).unwrap();
        assert!(prepared_path(dir.path(), "log").exists());
        seg.rebase(dir.path(), 42);
        assert_eq!(seg.base_offset(), 42);
        assert_eq!(seg.next_offset(), 42);
        let mut queue = Some(Vec::new());
        run_or_queue(
            &mut queue,
            FileJob::NameSegment {
                dir: dir.path().to_path_buf(),
                base_offset: 42,
            },
        )
        .unwrap();
        // Queued: nothing renamed yet.
        assert!(!dir.path().join(segment_file_name(42, "log")).exists());
        for job in queue.take().unwrap() {
            assert!(job.is_critical());
            job.run().unwrap();
        }
        for suffix in ["log", "index", "timeindex"] {
            assert!(dir.path().join(segment_file_name(42, suffix)).exists());
            assert!(!prepared_path(dir.path(), suffix).exists());
        }
        // The descriptor still writes the renamed file.
        std::os::unix::fs::FileExt::write_all_at(&*seg.log_file(), b"abc", 0).unwrap();
        assert_eq!(
            std::fs::read(dir.path().join(segment_file_name(42, "log"))).unwrap(),
            b"abc"
        );
        assert_eq!(
            seg.log_path(),
            dir.path().join(segment_file_name(42, "log"))
        );
    }

    #[test]
    fn txn_index_appends_run_at_once_without_a_queue() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(segment_file_name(0, "txnindex"));
        let entry = AbortedTxn {
            producer_id: 7,
            first_offset: 1,
            last_offset: 3,
            last_stable_offset: 4,
        };
        let mut queue = None;
        run_or_queue(
            &mut queue,
            FileJob::TxnIndexAppend {
                path: path.clone(),
                entry,
            },
        )
        .unwrap();
        assert_eq!(
            crate::storage::txn_index::read_txn_index(&path).unwrap(),
            Some(vec![entry])
        );
    }
}
