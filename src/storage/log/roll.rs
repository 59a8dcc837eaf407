//! The roll of a [`PartitionLog`]'s active segment (Kafka
//! `LogSegment.shouldRoll`, `UnifiedLog.roll`) and its deferred file work
//! (see [`crate::storage::file_jobs`]): on a shard the next segment is
//! created ahead off the reactor ([`SegmentPrep`]) and a roll only swaps it
//! in, its file work queued for the shard's I/O thread.

use super::*;

/// What it takes to create the next segment of a log ahead of its roll,
/// off the shard ([`PartitionLog::prepare_segment`]): its files under the
/// prepared names, indexes emptied, disk reserved with `preallocate`.
#[derive(Debug, Clone)]
pub struct SegmentPrep {
    dir: PathBuf,
    index_max_bytes: u32,
    preallocate: Option<u64>,
}

impl SegmentPrep {
    /// Creates the segment (blocking: the shard's I/O thread runs it). Give
    /// the result to [`PartitionLog::install_prepared`]. Errors with the
    /// failed file creation or reservation.
    pub fn create(self) -> std::io::Result<Segment> {
        Segment::create_prepared(&self.dir, self.index_max_bytes, self.preallocate)
    }
}

/// Why the active segment is due to roll (Kafka `LogSegment.shouldRoll`).
#[derive(Debug, Clone, Copy)]
struct RollDue {
    full: bool,
    aged: bool,
    index_full: bool,
    overflow: bool,
}

impl PartitionLog {
    /// From now on the log's file work that may block in the kernel (see
    /// [`super::file_jobs`]: leader-epoch checkpoints, `.txnindex` appends,
    /// a roll's work on the old and the new segment, renames of deleted
    /// segments) is not done by the calls that cause it but queued, in
    /// order, for the owner to take with [`Self::take_file_jobs`] after
    /// each call and run on one thread in that order; and a roll swaps in
    /// a segment created ahead ([`Self::prepare_segment`]). Memory (the
    /// epoch cache, the segments) changes at once as before. A shard
    /// switches its logs to this when it opens them; [`Self::close`]
    /// switches back.
    pub fn defer_file_work(&mut self) {
        self.jobs.get_or_insert_with(Vec::new);
    }

    /// Gives the file work queued since the last call, in the order to run
    /// it (empty without [`Self::defer_file_work`]).
    pub fn take_file_jobs(&mut self) -> Vec<FileJob> {
        self.jobs.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Takes why queued file work failed (a critical [`FileJob`]): the log
    /// takes no more appends (as after a failed write; restart recovery
    /// cuts what is left) and its leader-epoch checkpoint counts as not
    /// written, so a close writes it again.
    pub fn file_work_failed(&mut self, why: String) {
        ::log::error!(
            "{}: {why}; the partition takes no appends until restart",
            self.dir.display()
        );
        self.failed.get_or_insert(why);
        self.epochs.mark_dirty();
    }

    /// With deferred file work, gives what it takes to create the next
    /// segment ahead of its roll when none is prepared or being prepared
    /// (and the log takes appends), and the roll is near at `now_ms` (ms):
    /// the active segment holds half of `segment.bytes`, or half of
    /// `segment.ms` passed since its first append; with `force`, whenever
    /// one is wanted now. Only logs that fill up hold a second segment's
    /// files (and its `preallocate` reservation). The owner runs
    /// [`SegmentPrep::create`] off the shard and hands the result to
    /// [`Self::install_prepared`]. None otherwise.
    pub fn prepare_segment(&mut self, now_ms: i64, force: bool) -> Option<SegmentPrep> {
        if self.jobs.is_none() || self.prepared.is_some() || self.preparing || self.failed.is_some()
        {
            return None;
        }
        if !force && !self.roll_near(now_ms) {
            return None;
        }
        self.preparing = true;
        Some(SegmentPrep {
            dir: self.dir.clone(),
            index_max_bytes: self.config.segment_index_bytes,
            preallocate: self
                .config
                .preallocate
                .then(|| self.config.segment_bytes.min(MAX_SEGMENT_BYTES)),
        })
    }

    /// Takes the outcome of a [`SegmentPrep::create`]; keeps the segment for
    /// the next roll. A failure is logged (the next roll then waits, or
    /// creates the segment itself when it cannot wait); a segment that
    /// comes back to a closed log is dropped (its files are removed at
    /// close or by recovery).
    pub fn install_prepared(&mut self, seg: std::io::Result<Segment>) {
        self.preparing = false;
        match seg {
            Ok(seg) => {
                if self.jobs.is_some() && self.failed.is_none() && self.prepared.is_none() {
                    self.prepared = Some(seg);
                }
            }
            Err(e) => ::log::warn!(
                "{}: the next segment could not be prepared: {e}",
                self.dir.display()
            ),
        }
    }

    /// Whether a [`SegmentPrep`] was handed out and its outcome not yet
    /// installed.
    pub fn preparing_segment(&self) -> bool {
        self.preparing
    }

    /// Whether a segment is prepared for the next roll.
    pub fn has_prepared_segment(&self) -> bool {
        self.prepared.is_some()
    }

    /// Takes an upper bound of an append's bytes and offsets and the broker
    /// time `now_ms` (ms); gives whether its reservation would roll the
    /// active segment while no prepared segment is there to swap in (with
    /// deferred file work only): the owner then awaits a preparation
    /// before it reserves, so the roll opens no file on the shard.
    pub fn needs_prepared_segment(&self, bytes: u64, offsets: i64, now_ms: i64) -> bool {
        self.jobs.is_some()
            && self.prepared.is_none()
            && self.roll_due(bytes, offsets, now_ms).is_some()
    }

    /// Writes the leader-epoch cache's whole checkpoint, or queues it with
    /// deferred file work. A failure (at once only) marks it as not
    /// written and gives `Io`.
    pub(in crate::storage) fn write_epochs(&mut self) -> Result<(), StorageError> {
        let c = self.epochs.checkpoint();
        if let Err(e) = run_or_queue(&mut self.jobs, FileJob::EpochCheckpoint(c)) {
            self.epochs.mark_dirty();
            return Err(e.into());
        }
        Ok(())
    }

    /// Gives why the active segment is due to roll before an append of
    /// `bytes` bytes and `offsets` offsets at `now_ms`, None when it is
    /// not (or holds nothing yet).
    fn roll_due(&self, bytes: u64, offsets: i64, now_ms: i64) -> Option<RollDue> {
        let leo = self.next_offset;
        let cfg = &self.config;
        let seg = &self.active;
        if self.active_reserved == 0 {
            return None;
        }
        let max_bytes = cfg.segment_bytes.min(MAX_SEGMENT_BYTES);
        let full = self.active_reserved.saturating_add(bytes) > max_bytes;
        let aged = match (cfg.segment_ms, seg.roll_base_ms) {
            (Some(ms), Some(base)) => {
                let limit = i64::try_from(ms).unwrap_or(i64::MAX) - seg.roll_jitter_ms;
                now_ms.saturating_sub(base) > limit
            }
            _ => false,
        };
        let index_full = seg.indexes_full();
        let overflow = leo + offsets - 1 - seg.base_offset() > MAX_RELATIVE_OFFSET;
        (full || aged || index_full || overflow).then_some(RollDue {
            full,
            aged,
            index_full,
            overflow,
        })
    }

    /// Whether the active segment is half way to a roll by size or age (see
    /// [`Self::prepare_segment`]).
    fn roll_near(&self, now_ms: i64) -> bool {
        let max_bytes = self.config.segment_bytes.min(MAX_SEGMENT_BYTES);
        let half_full = self.active_reserved.saturating_mul(2) >= max_bytes;
        let half_aged = match (self.config.segment_ms, self.active.roll_base_ms) {
            (Some(ms), Some(base)) => {
                let limit = i64::try_from(ms).unwrap_or(i64::MAX) - self.active.roll_jitter_ms;
                now_ms.saturating_sub(base).saturating_mul(2) > limit
            }
            _ => false,
        };
        half_full || half_aged
    }

    pub(super) fn maybe_roll(
        &mut self,
        bytes: u64,
        offsets: i64,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        let Some(due) = self.roll_due(bytes, offsets, now_ms) else {
            return Ok(());
        };
        // Past these the append cannot go into the active segment at all.
        let must = due.overflow || self.active_reserved.saturating_add(bytes) > MAX_SEGMENT_BYTES;
        ::log::debug!(
            "{}: rolling segment at offset {} (size {}, time {}, index {}, offsets {})",
            self.dir.display(),
            self.next_offset,
            due.full,
            due.aged,
            due.index_full,
            due.overflow
        );
        self.roll_with(must)?;
        Ok(())
    }

    /// Closes the active segment for appends and starts a new one whose base
    /// offset is the LEO. Gives the new segment's base offset. (Kafka also
    /// flushes the old segment asynchronously; here it is flushed at close.)
    /// With deferred file work the new segment is the prepared one and the
    /// file work is queued (the old segment's last time-index entry and
    /// released preallocation, the new one's names); without a prepared
    /// segment the roll waits for the next append (the active segment
    /// stays, the base offset given is its own).
    pub fn roll(&mut self) -> Result<i64, StorageError> {
        self.roll_with(false)
    }

    /// [`Self::roll`]; `must`: the append cannot wait (the segment would
    /// pass its byte or offset limit), so without a prepared segment the
    /// new one is created on the calling thread, logged.
    fn roll_with(&mut self, must: bool) -> Result<i64, StorageError> {
        let leo = self.next_offset;
        if self.active_reserved == 0 {
            return Ok(self.active.base_offset());
        }
        let deferred = self.jobs.is_some();
        if deferred && self.prepared.is_none() && !must {
            ::log::debug!(
                "{}: the roll at offset {leo} waits for the next segment to be prepared",
                self.dir.display()
            );
            return Ok(self.active.base_offset());
        }
        if deferred {
            let time_entry = self.active.finish_time_index_deferred();
            let release = self
                .active
                .release_preallocation_deferred(self.active_reserved);
            run_or_queue(
                &mut self.jobs,
                FileJob::FinishSegment {
                    time_entry,
                    release,
                },
            )?;
        } else {
            self.active.finish_time_index()?;
        }
        let seg = self.next_segment(leo)?;
        let mut old = std::mem::replace(&mut self.active, seg);
        if !deferred {
            old.release_preallocation_at(self.active_reserved)?;
        }
        self.older.push(old);
        self.active_reserved = 0;
        Ok(leo)
    }

    /// Gives the segment starting at `base_offset` for a roll: the prepared
    /// one, renamed in memory with its files' renaming queued (or made at
    /// once), else one created on the calling thread (logged when file work
    /// is deferred: the shard then waited for nothing).
    fn next_segment(&mut self, base_offset: i64) -> Result<Segment, StorageError> {
        if let Some(mut seg) = self.prepared.take() {
            seg.rebase(&self.dir, base_offset);
            seg.set_index_max_bytes(self.config.segment_index_bytes);
            seg.roll_jitter_ms = self.config.random_segment_jitter();
            run_or_queue(
                &mut self.jobs,
                FileJob::NameSegment {
                    dir: self.dir.clone(),
                    base_offset,
                },
            )?;
            return Ok(seg);
        }
        if self.jobs.is_some() {
            ::log::warn!(
                "{}: no segment prepared for a roll at offset {base_offset} that cannot wait; creating it on the shard",
                self.dir.display()
            );
            self.created_here = true;
        }
        self.new_segment(base_offset)
    }

    /// Whether a roll created its segment's files on the calling thread
    /// since the last call (deferred file work only): the owner then owes
    /// the directory an fsync before it counts records in that segment as
    /// flushed, as it does after a prepared segment's renames.
    pub fn take_segment_created_here(&mut self) -> bool {
        std::mem::take(&mut self.created_here)
    }

    /// Creates the empty segment starting at `base_offset` with this log's
    /// settings: its roll jitter and, with `preallocate`, its disk reserved.
    pub(super) fn new_segment(&self, base_offset: i64) -> Result<Segment, StorageError> {
        let mut seg = Segment::create(&self.dir, base_offset, self.config.segment_index_bytes)?;
        seg.roll_jitter_ms = self.config.random_segment_jitter();
        if self.config.preallocate {
            seg.preallocate(self.config.segment_bytes.min(MAX_SEGMENT_BYTES))?;
        }
        Ok(seg)
    }
}
