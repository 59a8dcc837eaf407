//! [`PartitionLog`]: the segments of one partition, with append (offset
//! assignment), fetch reads (as sendfile regions), ListOffsets lookups, the
//! leader-epoch cache (`log/epochs.rs`) and truncation (`log/truncate.rs`).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::batch::{
    log_append_time_header, BatchHeader, ValidatedBatch, RECORD_BATCH_HEADER_BYTES,
};
use super::epoch_cache::LeaderEpochCache;
use super::file_jobs::{run_or_queue, FileJob};
use super::index::IndexWrite;
use super::recovery;
use super::segment::{
    segment_file_name, ReadMode, Segment, MAX_RELATIVE_OFFSET, MAX_SEGMENT_BYTES,
};
use super::txn_index::{
    read_txn_index, write_txn_index, AbortedTxn, ControlMarker, TXN_INDEX_SUFFIX,
};
use super::StorageError;
use std::os::unix::fs::FileExt;

// Defined below the log (batches and recovery use them); kept at this path.
pub use super::log_config::{LogConfig, TimestampType};

/// A byte range of one segment's `.log` file, to be sent with sendfile(2).
/// Always whole batches.
#[derive(Clone, Debug)]
pub struct FileRegion {
    /// The `.log` file (shared; stays valid even if the segment is later deleted).
    pub file: Arc<File>,
    /// Start of the range in the file (bytes).
    pub position: u64,
    /// Length of the range (bytes).
    pub len: u64,
}

/// What [`PartitionLog::append`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppendResult {
    /// Offset assigned to the first record of the first batch (-1 for an empty append).
    pub base_offset: i64,
    /// Offset of the last record appended (-1 for an empty append).
    pub last_offset: i64,
    /// The broker time (ms) stamped into the batches under LogAppendTime; -1 under CreateTime.
    pub log_append_time: i64,
    /// Log start offset after the append (for the Produce response, KIP-107).
    pub log_start_offset: i64,
    /// Bytes written to the `.log`.
    pub bytes: u64,
    /// Records appended (sum of recordsCount).
    pub records: u64,
}

/// The write a [`PartitionLog::reserve`] asks for: `parts` written
/// contiguously at byte `at` of `file` (the active segment's `.log` when
/// reserved). The record bytes are slices of the request's buffer.
#[derive(Debug)]
pub struct PendingWrite {
    /// The segment's `.log`.
    pub file: Arc<File>,
    /// Byte position of the first part.
    pub at: u64,
    /// The slices to write, in order.
    pub parts: Vec<bytes::Bytes>,
}

impl PendingWrite {
    /// Makes the write on the calling thread (pwritev(2), short writes
    /// resumed): for callers without an I/O thread.
    pub fn write_now(&self) -> std::io::Result<()> {
        let slices: Vec<&[u8]> = self.parts.iter().map(|p| p.as_ref()).collect();
        super::segment::pwritev_all(&self.file, &slices, self.at)
    }
}

/// Where one reserved batch goes (see [`AppendTicket`]).
#[derive(Debug, Clone, Copy)]
pub struct ReservedBatch {
    /// Byte position in the segment's `.log`.
    pub position: u64,
    /// Batch size in bytes.
    pub size: u64,
    /// Last offset assigned to it.
    pub last_offset: i64,
    /// Its max timestamp (ms) as stored (the append time under LogAppendTime).
    pub max_timestamp: i64,
}

/// What [`PartitionLog::commit`] needs of a reservation, and the append's
/// result once committed.
#[derive(Debug, Clone)]
pub struct AppendTicket {
    /// Base offset of the segment the batches were placed in.
    pub segment_base: i64,
    /// The batches, in offset order.
    pub batches: Vec<ReservedBatch>,
    /// The offsets assigned (valid once committed).
    pub result: AppendResult,
    /// The log end offset this reservation follows: its base offset, or
    /// less when a follower copies a leader's compacted log across a gap
    /// (offsets the cleaner removed, Kafka's follower accepts them the same
    /// way). [`PartitionLog::commit`] takes reservations in this order.
    pub follows: i64,
}

/// What [`PartitionLog::read`] found.
#[derive(Clone, Debug)]
pub struct ReadResult {
    /// File ranges holding whole batches, in offset order (empty: nothing to return).
    pub regions: Vec<FileRegion>,
    /// Total bytes of all regions.
    pub bytes: u64,
    /// Size in bytes of the first batch of the regions (0 when none): a
    /// caller cutting the result to a smaller budget knows from it whether
    /// anything fits without reading again.
    pub first_batch_bytes: u64,
    /// High watermark at read time.
    pub high_watermark: i64,
    /// Log start offset at read time.
    pub log_start_offset: i64,
    /// Log end offset (LEO) at read time.
    pub log_end_offset: i64,
    /// Offset after the returned data: the base offset of the batch that
    /// follows it in its segment, or that segment's next offset; the fetch
    /// offset when nothing is returned. Bounds the aborted transactions a
    /// READ_COMMITTED fetch reports (Kafka `fetchUpperBoundOffset`).
    pub end_offset: i64,
}

/// The log of one partition: its directory and segments, oldest first, the
/// last one being the active segment that receives appends.
#[derive(Debug)]
pub struct PartitionLog {
    pub(super) dir: PathBuf,
    pub(super) config: LogConfig,
    /// Inactive segments, sorted by base offset.
    pub(super) older: Vec<Segment>,
    /// The segment receiving appends (highest base offset).
    pub(super) active: Segment,
    pub(super) log_start_offset: i64,
    pub(super) log_end_offset: i64,
    pub(super) high_watermark: i64,
    /// The offset the next reservation gets (the LEO plus every reserved,
    /// not yet committed append).
    pub(super) next_offset: i64,
    /// The active segment's size plus its reserved, uncommitted appends (bytes).
    pub(super) active_reserved: u64,
    /// Why the log stopped taking appends (a failed write), if it did.
    pub(super) failed: Option<String>,
    /// The high watermark follows the LEO at every commit (one replica);
    /// false for a replicated partition, whose high watermark the
    /// replication sets ([`PartitionLog::set_high_watermark`]).
    pub(super) hw_follows_leo: bool,
    /// The leader-epoch cache (`leader-epoch-checkpoint`), updated at
    /// every reservation whose batches start a newer epoch.
    pub(super) epochs: LeaderEpochCache,
    /// File work left to the owner, in order (see
    /// [`PartitionLog::defer_file_work`]); None: run at once.
    pub(super) jobs: Option<Vec<FileJob>>,
    /// The next segment, created ahead off the shard and swapped in by the
    /// next roll ([`PartitionLog::prepare_segment`]).
    pub(super) prepared: Option<Segment>,
    /// A [`SegmentPrep`] was handed out and not yet installed.
    pub(super) preparing: bool,
    /// A roll with deferred file work created its segment's files on the
    /// calling thread (none was prepared): their names are in the
    /// directory, not yet durable (see [`Self::take_segment_created_here`]).
    pub(super) created_here: bool,
}

impl PartitionLog {
    /// Takes the partition directory (`<topic>-<partition>`, created if
    /// missing) and the config; opens and recovers it (see
    /// [`super::recovery`]), loads its leader-epoch cache (rebuilt from the
    /// batch headers when the checkpoint is missing or unreadable, see
    /// `log/epochs.rs`) and gives the log. I/O failures → `Io`,
    /// unrecoverable layouts → `Corrupt` (both KAFKA_STORAGE_ERROR).
    pub fn open(dir: &Path, config: LogConfig) -> Result<PartitionLog, StorageError> {
        let clean_shutdown = dir.join(recovery::CLEAN_SHUTDOWN_FILE).exists();
        let (older, mut active) = recovery::recover(dir, &config)?;
        // A loaded active segment gets its own jitter, as in Kafka; an empty
        // one (a new partition) is reserved like any new segment.
        active.roll_jitter_ms = config.random_segment_jitter();
        if config.preallocate && active.size() == 0 {
            active.preallocate(config.segment_bytes.min(MAX_SEGMENT_BYTES))?;
        }
        let log_end_offset = active.next_offset();
        let active_size = active.size();
        // The first segment's base offset, or the DeleteRecords checkpoint
        // when that is further (never past the LEO).
        let log_start_offset = older
            .first()
            .unwrap_or(&active)
            .base_offset()
            .max(super::checkpoint::read_log_start_checkpoint(dir).unwrap_or(i64::MIN))
            .min(log_end_offset);
        let mut log = PartitionLog {
            dir: dir.to_path_buf(),
            config,
            older,
            active,
            log_start_offset,
            log_end_offset,
            high_watermark: log_end_offset,
            next_offset: log_end_offset,
            active_reserved: active_size,
            failed: None,
            hw_follows_leo: true,
            epochs: LeaderEpochCache::new(dir, Vec::new()),
            jobs: None,
            prepared: None,
            preparing: false,
            created_here: false,
        };
        log.load_epoch_cache(clean_shutdown)?;
        Ok(log)
    }

    /// Takes a new config (e.g. after an AlterConfigs); it applies to later
    /// appends, rolls and index entries.
    pub fn set_config(&mut self, config: LogConfig) {
        for seg in self.older.iter_mut() {
            seg.set_index_max_bytes(config.segment_index_bytes);
        }
        self.active.set_index_max_bytes(config.segment_index_bytes);
        self.config = config;
    }

    /// Gives the current config.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// Gives the partition directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Gives all segments, oldest first (the active one last).
    fn segments(&self) -> impl Iterator<Item = &Segment> {
        self.older.iter().chain(std::iter::once(&self.active))
    }

    /// True while reserved appends are not yet committed (their writes in flight).
    pub fn has_pending(&self) -> bool {
        self.next_offset != self.log_end_offset
    }

    /// Takes a fetch offset, a byte budget (`max_bytes`, the partition's
    /// `partition_max_bytes` capped by what is left of the request's budget)
    /// and KIP-74's `min_one_batch`; gives whole batches starting with the
    /// batch containing `fetch_offset`, within `max_bytes` (the first batch
    /// even if larger when `min_one_batch`, else nothing), never past the LEO,
    /// as one region that stops at the end of its segment.
    /// `fetch_offset == LEO` gives no regions; outside [log start offset, LEO]
    /// → `OffsetOutOfRange` (OFFSET_OUT_OF_RANGE). Batches are located with
    /// the sparse index then a forward scan of batch headers (pread, page cache).
    pub fn read(
        &self,
        fetch_offset: i64,
        max_bytes: u64,
        min_one_batch: bool,
    ) -> Result<ReadResult, StorageError> {
        self.read_bounded(fetch_offset, max_bytes, min_one_batch, self.high_watermark)
    }

    /// As [`Self::read`], but gives only whole batches whose last offset is
    /// below `max_offset` (exclusive upper bound: the high watermark for
    /// READ_UNCOMMITTED, the last stable offset for READ_COMMITTED, KIP-98).
    /// A fetch offset in `[max_offset, LEO]` gives no regions (no error);
    /// outside [log start offset, LEO] → `OffsetOutOfRange`. `min_one_batch`
    /// never returns a batch reaching `max_offset`.
    pub fn read_bounded(
        &self,
        fetch_offset: i64,
        max_bytes: u64,
        min_one_batch: bool,
        max_offset: i64,
    ) -> Result<ReadResult, StorageError> {
        self.read_bounded_in(
            fetch_offset,
            max_bytes,
            min_one_batch,
            max_offset,
            ReadMode::Blocking,
        )
    }

    /// As [`Self::read_bounded`], reading batch headers with `mode`: under
    /// [`ReadMode::NoWait`] a header not in the page cache gives
    /// [`StorageError::NotCached`] (the range to warm before reading again)
    /// instead of a blocking read. The offset index is in memory.
    pub fn read_bounded_in(
        &self,
        fetch_offset: i64,
        max_bytes: u64,
        min_one_batch: bool,
        max_offset: i64,
        mode: ReadMode,
    ) -> Result<ReadResult, StorageError> {
        let mut result = ReadResult {
            regions: Vec::new(),
            bytes: 0,
            first_batch_bytes: 0,
            high_watermark: self.high_watermark,
            log_start_offset: self.log_start_offset,
            log_end_offset: self.log_end_offset,
            end_offset: fetch_offset,
        };
        if fetch_offset == self.log_end_offset {
            return Ok(result);
        }
        if fetch_offset < self.log_start_offset || fetch_offset > self.log_end_offset {
            return Err(self.out_of_range(fetch_offset));
        }
        if fetch_offset >= max_offset {
            return Ok(result);
        }
        let first = if fetch_offset >= self.active.base_offset() {
            self.older.len()
        } else {
            self.older
                .partition_point(|s| s.base_offset() <= fetch_offset)
                .saturating_sub(1)
        };
        let candidates = self
            .older
            .get(first..)
            .unwrap_or(&[])
            .iter()
            .chain(std::iter::once(&self.active));
        for seg in candidates {
            if let Some((pos, header)) = seg.find_batch_in(fetch_offset, mode)? {
                if header.last_offset() >= max_offset {
                    return Ok(result);
                }
                let mut len = seg.region_len(pos, &header, max_bytes, min_one_batch, mode)?;
                if max_offset < seg.next_offset() {
                    // Cut at the first batch reaching the bound (a batch
                    // start, so the region still holds whole batches).
                    if let Some((bound_pos, _)) = seg.find_batch_in(max_offset, mode)? {
                        len = len.min(bound_pos.saturating_sub(pos));
                    }
                }
                if len > 0 {
                    result.regions.push(FileRegion {
                        file: seg.log_file(),
                        position: pos,
                        len,
                    });
                    result.bytes = len;
                    result.first_batch_bytes = header.total_size() as u64;
                    let end = pos + len;
                    result.end_offset = if end < seg.size() {
                        seg.read_header_in(end, mode)?.base_offset
                    } else {
                        seg.next_offset()
                    };
                }
                return Ok(result);
            }
        }
        Ok(result)
    }

    fn out_of_range(&self, requested: i64) -> StorageError {
        StorageError::OffsetOutOfRange {
            requested,
            log_start_offset: self.log_start_offset,
            log_end_offset: self.log_end_offset,
        }
    }

    /// Gives the log start offset (first offset still in the log; base offset
    /// of the first segment).
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }

    /// Gives the log end offset (LEO): the offset the next record will get.
    pub fn log_end_offset(&self) -> i64 {
        self.log_end_offset
    }

    /// Gives the high watermark. Single replica: equal to the LEO (kept as a
    /// separate field for replication later).
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// Takes a timestamp in ms (ListOffsets with a real timestamp, KIP-79);
    /// gives (offset, timestamp) of the earliest batch whose max timestamp is
    /// at least `ts`: its base offset and max timestamp (batch granularity; records
    /// are not decoded), or None (Kafka answers offset -1, timestamp -1).
    /// Uses each segment's max timestamp to skip segments, then the time
    /// index and a header scan.
    pub fn offset_for_timestamp(&self, ts: i64) -> Result<Option<(i64, i64)>, StorageError> {
        for seg in self.segments() {
            if let Some((off, t)) = seg.find_timestamp(ts)? {
                return Ok(Some((off.max(self.log_start_offset), t)));
            }
        }
        Ok(None)
    }

    /// ListOffsets timestamp -3 (KIP-734): gives (offset, timestamp) for the
    /// largest batch max timestamp (ms) in the log, earliest such batch on a
    /// tie; None when the log has no batch with a timestamp >= 0.
    /// Batch granularity: the offset is that batch's LAST offset (what Kafka
    /// before 3.8 / KAFKA-16310 returned, exact when timestamps increase
    /// within the batch), not the exact record's offset.
    pub fn max_timestamp_offset(&self) -> Result<Option<(i64, i64)>, StorageError> {
        let mut best: Option<(i64, i64)> = None;
        for seg in self.segments() {
            if seg.offset_of_max_timestamp < 0 || seg.max_timestamp < 0 {
                continue;
            }
            if best.is_none_or(|(_, t)| seg.max_timestamp > t) {
                best = Some((seg.offset_of_max_timestamp, seg.max_timestamp));
            }
        }
        Ok(best)
    }

    /// fdatasyncs the active segment's `.log` (flush policy: Kafka
    /// `log.flush.interval.messages` / `log.flush.interval.ms`). A caller may
    /// instead `sync_data()` the file from [`Self::active_log_file`] on
    /// another thread. `Io` on failure (KAFKA_STORAGE_ERROR).
    pub fn flush(&mut self) -> Result<(), StorageError> {
        self.active.flush_log()?;
        Ok(())
    }

    /// Gives a shared handle to the active segment's `.log`.
    pub fn active_log_file(&self) -> Arc<File> {
        self.active.log_file()
    }

    /// Gives the `.log` of the segment with base offset `base`, if it exists.
    pub fn log_file_of(&self, base: i64) -> Option<Arc<File>> {
        if self.active.base_offset() == base {
            return Some(self.active.log_file());
        }
        self.older
            .iter()
            .rev()
            .find(|s| s.base_offset() == base)
            .map(|s| s.log_file())
    }

    /// Base offset of the active segment.
    pub fn active_base_offset(&self) -> i64 {
        self.active.base_offset()
    }

    /// Marks a clean shutdown: writes the final time index entry of the
    /// active segment, fdatasyncs every segment's `.log` and indexes written
    /// since their last flush, writes the leader-epoch checkpoint if a
    /// start truncation left it behind, then writes `.clean_shutdown` in
    /// the partition directory and fsyncs the directory. The next open
    /// trusts the files (only the tail is checked) and deletes the marker.
    /// The log takes no append after it (a task still holding the
    /// partition at shutdown, such as a replica fetcher, gets `Io`).
    /// Appends reserved and not committed (their writes done or not, never
    /// answered) are cut off first, so the marked log ends at its LEO; when
    /// they reach into a segment after the active one's start cannot be
    /// told, the close is refused (`Io`) and the next start recovers.
    pub fn close(&mut self) -> Result<(), StorageError> {
        // The rest is done here, on the calling thread; work still queued
        // (the owner waited for what it took) is done first, in order.
        if let Some(queued) = self.jobs.take() {
            for job in queued {
                job.run()?;
            }
        }
        self.prepared = None;
        match super::segment::remove_prepared_files(&self.dir) {
            Ok(0) => {}
            Ok(n) => ::log::info!(
                "{}: removed the {n} file(s) of the segment prepared for the next roll (it holds no record)",
                self.dir.display()
            ),
            Err(e) => ::log::warn!(
                "{}: cannot remove the segment prepared for the next roll: {e}",
                self.dir.display()
            ),
        }
        if self.has_pending() {
            if self.log_end_offset < self.active.base_offset() {
                return Err(StorageError::Io(std::io::Error::other(format!(
                    "{}: appends in flight across a segment roll at close",
                    self.dir.display()
                ))));
            }
            let committed = self.active.size();
            self.active.truncate_tail(committed, self.log_end_offset)?;
            self.next_offset = self.log_end_offset;
            self.active_reserved = committed;
            if self.epochs.truncate_from_end(self.log_end_offset) {
                self.write_epochs()?;
            }
        }
        self.failed
            .get_or_insert_with(|| "the log was closed at shutdown".to_string());
        self.active.finish_time_index()?;
        self.active.release_preallocation()?;
        for seg in self.older.iter_mut() {
            seg.flush_all()?;
        }
        self.active.flush_all()?;
        if self.epochs.is_dirty() {
            self.write_epochs()?;
        }
        recovery::write_clean_shutdown_marker(&self.dir)?;
        Ok(())
    }

    /// Gives the header of every batch in the log, oldest first (the offsets
    /// as stored). Used to rebuild producer state at start-up.
    pub fn batch_headers(&self) -> Result<Vec<BatchHeader>, StorageError> {
        let mut out = Vec::new();
        for seg in self.segments() {
            seg.for_each_header(|h| out.push(*h))?;
        }
        Ok(out)
    }

    /// Gives every batch of the log whose last offset is at or above
    /// `from`, oldest first, for rebuilding the producer and transaction
    /// state at start-up (from the log start, or from a producer-state
    /// snapshot's offset): the header (offsets as stored) and, for control
    /// batches only, the marker read from disk (None when the control record
    /// is not a known marker). Segments wholly below `from` are not read.
    pub fn batches_with_markers(
        &self,
        from: i64,
    ) -> Result<Vec<(BatchHeader, Option<ControlMarker>)>, StorageError> {
        let mut out = Vec::new();
        let mut buf = Vec::new();
        let segs: Vec<&Segment> = self.segments().collect();
        for (i, seg) in segs.iter().enumerate() {
            if segs
                .get(i + 1)
                .is_some_and(|next| next.base_offset() <= from)
            {
                continue;
            }
            let mut pos = 0;
            while pos < seg.size() {
                let h = seg.read_header(pos)?;
                let size = h.total_size() as u64;
                if h.base_offset + i64::from(h.last_offset_delta) < from {
                    pos += size;
                    continue;
                }
                let marker = if h.is_control() {
                    buf.resize(h.total_size(), 0);
                    seg.log_file().read_exact_at(&mut buf, pos)?;
                    super::records::control_marker(&buf)
                } else {
                    None
                };
                pos += size;
                out.push((h, marker));
            }
        }
        Ok(out)
    }

    /// Gives the aborted transactions of the `.txnindex` files whose marker
    /// is below `offset`, in marker order (start-up from a producer-state
    /// snapshot taken at `offset`; the rest is rebuilt from the log).
    pub fn txn_index_entries_below(&self, offset: i64) -> Result<Vec<AbortedTxn>, StorageError> {
        let mut out = Vec::new();
        for seg in self.segments().filter(|s| s.base_offset() < offset) {
            let path = self
                .dir
                .join(segment_file_name(seg.base_offset(), TXN_INDEX_SUFFIX));
            if let Some(entries) = read_txn_index(&path)? {
                out.extend(entries.into_iter().filter(|a| a.last_offset < offset));
            }
        }
        out.sort_by_key(|a| a.last_offset);
        Ok(out)
    }

    /// Gives the `.txnindex` path of every segment, oldest first, whether
    /// the file exists or not (no system call: for a snapshot written off
    /// the shard, which skips the missing ones).
    pub fn txn_index_paths(&self) -> Vec<PathBuf> {
        self.segments()
            .map(|seg| {
                self.dir
                    .join(segment_file_name(seg.base_offset(), TXN_INDEX_SUFFIX))
            })
            .collect()
    }

    /// Gives the `.txnindex` path of the segment holding `offset` (the last
    /// segment whose base offset is <= `offset`).
    fn txn_index_path_for(&self, offset: i64) -> PathBuf {
        let base = self
            .segments()
            .take_while(|s| s.base_offset() <= offset)
            .last()
            .map(|s| s.base_offset())
            .unwrap_or_else(|| self.active.base_offset());
        self.dir.join(segment_file_name(base, TXN_INDEX_SUFFIX))
    }

    /// Takes an aborted transaction whose ABORT marker (`entry.last_offset`)
    /// was just reserved; appends its 34-byte entry to the `.txnindex` of
    /// the segment holding the marker, or, with deferred file work, queues
    /// the append (it then lands before the marker's own write, which the
    /// owner queues after it). `Io` on failure of an append made at once
    /// (KAFKA_STORAGE_ERROR; the file is rebuilt from the log at the next
    /// start-up).
    pub fn append_txn_index(&mut self, entry: &AbortedTxn) -> Result<(), StorageError> {
        let path = self.txn_index_path_for(entry.last_offset);
        run_or_queue(
            &mut self.jobs,
            FileJob::TxnIndexAppend {
                path,
                entry: *entry,
            },
        )?;
        Ok(())
    }

    /// Takes every aborted transaction rebuilt from the log (in marker
    /// order); rewrites each segment's `.txnindex` that is missing or does
    /// not hold exactly the entries whose marker is in that segment (a file
    /// that should be empty is removed). Segments wholly below `from` are
    /// not checked: their entries were read from those files (start-up from
    /// a producer-state snapshot at `from`). Gives how many files were
    /// rewritten.
    pub fn sync_txn_indexes(
        &self,
        aborted: &[AbortedTxn],
        from: i64,
    ) -> Result<usize, StorageError> {
        let mut fixed = 0;
        let segs: Vec<&super::segment::Segment> = self.segments().collect();
        for (i, seg) in segs.iter().enumerate() {
            let next_base = segs.get(i + 1).map_or(i64::MAX, |n| n.base_offset());
            if next_base <= from {
                continue;
            }
            let want: Vec<AbortedTxn> = aborted
                .iter()
                .filter(|a| a.last_offset >= seg.base_offset() && a.last_offset < next_base)
                .copied()
                .collect();
            let path = self
                .dir
                .join(segment_file_name(seg.base_offset(), TXN_INDEX_SUFFIX));
            let have = read_txn_index(&path)?;
            match have {
                None if want.is_empty() => {}
                Some(h) if h == want => {}
                _ if want.is_empty() => {
                    ::log::warn!(
                        "{}: removing stale aborted-transaction index",
                        path.display()
                    );
                    std::fs::remove_file(&path)?;
                    fixed += 1;
                }
                _ => {
                    ::log::warn!(
                        "{}: rewriting aborted-transaction index from the log ({} entries)",
                        path.display(),
                        want.len()
                    );
                    write_txn_index(&path, &want)?;
                    fixed += 1;
                }
            }
        }
        Ok(fixed)
    }

    /// Gives the total size in bytes of all `.log` files.
    pub fn size_bytes(&self) -> u64 {
        self.segments().map(|s| s.size()).sum()
    }

    /// Gives the number of segments (>= 1).
    pub fn segment_count(&self) -> usize {
        self.older.len() + 1
    }

    /// Gives the base offsets of all segments, oldest first.
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.segments().map(|s| s.base_offset()).collect()
    }
}

#[path = "log/append.rs"]
mod append;

#[path = "log/epochs.rs"]
mod epochs;

#[path = "log/roll.rs"]
mod roll;
pub use roll::SegmentPrep;

#[path = "log/truncate.rs"]
mod truncate;

#[cfg(test)]
#[path = "log/tests.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "log/deferred_tests.rs"]
mod deferred_tests;

#[cfg(test)]
mod model_tests;
