//! [`PartitionLog`]: the segments of one partition, with append (offset
//! assignment), fetch reads (as sendfile regions) and ListOffsets lookups.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::batch::{
    log_append_time_header, BatchHeader, ValidatedBatch, RECORD_BATCH_HEADER_BYTES,
};
use super::index::IndexWrite;
use super::recovery;
use super::segment::{
    segment_file_name, ReadMode, Segment, MAX_RELATIVE_OFFSET, MAX_SEGMENT_BYTES,
};
use super::txn_index::{
    append_txn_index, control_marker, read_txn_index, write_txn_index, AbortedTxn, ControlMarker,
    TXN_INDEX_SUFFIX,
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
}

impl PartitionLog {
    /// Takes the partition directory (`<topic>-<partition>`, created if
    /// missing) and the config; opens and recovers it (see
    /// [`super::recovery`]) and gives the log. I/O failures → `Io`,
    /// unrecoverable layouts → `Corrupt` (both KAFKA_STORAGE_ERROR).
    pub fn open(dir: &Path, config: LogConfig) -> Result<PartitionLog, StorageError> {
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
        Ok(PartitionLog {
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
        })
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

    /// Takes the Produce `records` bytes, the batches found in them by
    /// [`super::validate_batches`] and the broker time `now_ms` (ms); appends
    /// them on the calling thread and gives the offsets assigned: a
    /// [`Self::reserve`], the write with pwritev(2), then [`Self::commit`]
    /// with its index entries written at once. Used where no shard is
    /// running (tools, tests); a shard uses the three stages itself so that
    /// the write runs on its I/O thread.
    ///
    /// A failed `.log` write gives `Io` and leaves the log refusing appends
    /// (KAFKA_STORAGE_ERROR); a failed index write gives `Io` AFTER the data
    /// was appended (the index is rebuilt on the next open).
    pub fn append(
        &mut self,
        records: &[u8],
        batches: &[ValidatedBatch],
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendResult, StorageError> {
        let records = bytes::Bytes::copy_from_slice(records);
        let (write, ticket) = self.reserve(&records, batches, leader_epoch, now_ms)?;
        if let Some(w) = write {
            if let Err(e) = w.write_now() {
                self.fail(&ticket, &e);
                return Err(e.into());
            }
        }
        let index_writes = self.commit(&ticket)?;
        for w in &index_writes {
            w.write_now()?;
        }
        Ok(ticket.result)
    }

    /// Stage 1 of an append (Redpanda's "dispatched"): takes the Produce
    /// `records` bytes, the batches found in them by
    /// [`super::validate_batches`], the partition leader epoch and the
    /// broker time `now_ms` (ms); assigns the batches their offsets (from the
    /// last reserved offset on) and their place at the end of the active
    /// segment, and gives the write to make and the ticket to
    /// [`Self::commit`] once it is made. Nothing is visible to readers yet
    /// (the LEO and high watermark move at commit). Reservations are
    /// committed in the order they were made.
    ///
    /// The write is the batches without copying record bytes: per batch a
    /// 16-byte prefix (new base offset, the batch's own batchLength, and
    /// `leader_epoch` as partitionLeaderEpoch — all outside the CRC) then
    /// `[batch 16..end]`, or under LogAppendTime `[prefix][new header
    /// 16..61][batch 61..end]` (see [`log_append_time_header`]; the new
    /// header holds the new CRC at 17..21).
    ///
    /// Rolls a new segment first (Kafka `LogSegment.shouldRoll`) when the
    /// active segment is non-empty and: it would exceed `segment_bytes`; an
    /// index is full (`segment_index_bytes`); `segment_ms` elapsed since its
    /// first append (or, after a restart, since its first batch's max
    /// timestamp); or relative offsets would overflow i32.
    ///
    /// Empty `batches` gives no write and base/last offset -1. Batches not
    /// lying inside `records` → `Batch(CorruptMessage)`; a log whose earlier
    /// write failed → `Io` (KAFKA_STORAGE_ERROR, until the broker restarts
    /// and recovery cuts the partial data).
    pub fn reserve(
        &mut self,
        records: &bytes::Bytes,
        batches: &[ValidatedBatch],
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<(Option<PendingWrite>, AppendTicket), StorageError> {
        if let Some(why) = &self.failed {
            return Err(StorageError::Io(std::io::Error::other(format!(
                "{}: an earlier write failed ({why}); the log takes no appends until restart",
                self.dir.display()
            ))));
        }
        if batches.is_empty() {
            return Ok((
                None,
                AppendTicket {
                    segment_base: self.active.base_offset(),
                    batches: Vec::new(),
                    result: AppendResult {
                        base_offset: -1,
                        last_offset: -1,
                        log_append_time: -1,
                        log_start_offset: self.log_start_offset,
                        bytes: 0,
                        records: 0,
                    },
                },
            ));
        }
        // Re-read each header from the bytes being written so the offsets we
        // assign always match what lands on disk.
        let mut parts: Vec<(usize, BatchHeader)> = Vec::with_capacity(batches.len());
        let mut total_bytes: u64 = 0;
        let mut offsets_needed: i64 = 0;
        let mut record_count: u64 = 0;
        for b in batches {
            let bytes = b
                .position
                .checked_add(b.size)
                .and_then(|end| records.get(b.position..end))
                .ok_or_else(|| {
                    super::BatchError::CorruptMessage(super::batch::Corruption::OutsideRecordsAt {
                        position: b.position,
                        size: b.size,
                        records_len: records.len(),
                    })
                })?;
            let h = BatchHeader::parse(bytes)?;
            if h.total_size() != b.size || h.last_offset_delta < 0 {
                return Err(super::BatchError::CorruptMessage(
                    super::batch::Corruption::SizeMismatch {
                        position: b.position,
                    },
                )
                .into());
            }
            total_bytes += b.size as u64;
            offsets_needed += i64::from(h.last_offset_delta) + 1;
            record_count += u64::try_from(h.records_count).unwrap_or(0);
            parts.push((b.position, h));
        }

        self.maybe_roll(total_bytes, offsets_needed, now_ms)?;
        if self.active_reserved + total_bytes > MAX_SEGMENT_BYTES {
            return Err(StorageError::Inconsistent {
                path: None,
                what: super::Inconsistency::AppendTooLarge { bytes: total_bytes },
            });
        }

        let lat = self.config.message_timestamp_type == TimestampType::LogAppendTime;
        let first_offset = self.next_offset;
        let at = self.active_reserved;

        // The bytes this append adds before each batch's own bytes: the
        // 16-byte prefix (assigned base offset, the batch's own batchLength,
        // the partition leader epoch — all outside the CRC, which starts at
        // the attributes), under LogAppendTime followed by the new header's
        // bytes 16..61. All of them in one small buffer.
        let per = if lat { RECORD_BATCH_HEADER_BYTES } else { 16 };
        let mut head = Vec::with_capacity(per * parts.len());
        let mut next = first_offset;
        for (position, h) in &parts {
            let bytes = &records[*position..*position + h.total_size()];
            head.extend_from_slice(&next.to_be_bytes());
            head.extend_from_slice(&bytes[8..12]);
            head.extend_from_slice(&leader_epoch.to_be_bytes());
            if lat {
                head.extend_from_slice(&log_append_time_header(bytes, now_ms)[16..]);
            }
            next += i64::from(h.last_offset_delta) + 1;
        }
        let head = bytes::Bytes::from(head);
        let mut slices: Vec<bytes::Bytes> = Vec::with_capacity(parts.len() * 2);
        let mut reserved = Vec::with_capacity(parts.len());
        let mut pos = at;
        let mut next = first_offset;
        for (i, (position, h)) in parts.iter().enumerate() {
            let size = h.total_size();
            slices.push(head.slice(i * per..(i + 1) * per));
            slices.push(records.slice(*position + per..*position + size));
            let last = next + i64::from(h.last_offset_delta);
            reserved.push(ReservedBatch {
                position: pos,
                size: size as u64,
                last_offset: last,
                max_timestamp: if lat { now_ms } else { h.max_timestamp },
            });
            pos += size as u64;
            next = last + 1;
        }
        if self.active.roll_base_ms.is_none() {
            self.active.roll_base_ms = Some(now_ms);
        }
        self.next_offset = next;
        self.active_reserved = pos;
        Ok((
            Some(PendingWrite {
                file: self.active.log_file(),
                at,
                parts: slices,
            }),
            AppendTicket {
                segment_base: self.active.base_offset(),
                batches: reserved,
                result: AppendResult {
                    base_offset: first_offset,
                    last_offset: next - 1,
                    log_append_time: if lat { now_ms } else { -1 },
                    log_start_offset: self.log_start_offset,
                    bytes: total_bytes,
                    records: record_count,
                },
            },
        ))
    }

    /// Stage 3 of an append (Redpanda's "produced"): takes the ticket of a
    /// reservation whose write completed; it must be the oldest one not yet
    /// committed (else `Inconsistent`). Advances the segment's size and next
    /// offset, the in-memory indexes (as Kafka's `LogSegment.append`: an
    /// entry when more than `index.interval.bytes` were appended since the
    /// last), the LEO and the high watermark, so readers see the batches.
    /// Gives the index file writes still to make (in file order), for the
    /// shard's I/O thread. An empty reservation commits nothing.
    pub fn commit(&mut self, ticket: &AppendTicket) -> Result<Vec<IndexWrite>, StorageError> {
        let Some(first) = ticket.batches.first() else {
            return Ok(Vec::new());
        };
        if ticket.result.base_offset != self.log_end_offset {
            return Err(StorageError::Inconsistent {
                path: Some(self.dir.clone()),
                what: super::Inconsistency::CommitOutOfOrder {
                    base_offset: ticket.result.base_offset,
                    log_end_offset: self.log_end_offset,
                },
            });
        }
        let interval = self.config.index_interval_bytes;
        let seg = if self.active.base_offset() == ticket.segment_base {
            &mut self.active
        } else {
            match self
                .older
                .iter_mut()
                .rev()
                .find(|s| s.base_offset() == ticket.segment_base)
            {
                Some(s) => s,
                None => {
                    return Err(StorageError::Inconsistent {
                        path: Some(self.dir.clone()),
                        what: super::Inconsistency::SegmentGone {
                            segment_base: ticket.segment_base,
                        },
                    })
                }
            }
        };
        if seg.size() != first.position {
            return Err(StorageError::Inconsistent {
                path: Some(self.dir.clone()),
                what: super::Inconsistency::CommitPosition {
                    position: first.position,
                    segment_size: seg.size(),
                },
            });
        }
        let mut writes = Vec::new();
        for b in &ticket.batches {
            seg.note_batch_deferred(
                b.position,
                b.size,
                b.last_offset,
                b.max_timestamp,
                interval,
                &mut writes,
            );
        }
        self.log_end_offset = ticket.result.last_offset + 1;
        self.high_watermark = self.log_end_offset;
        Ok(writes)
    }

    /// Takes the ticket of a reservation whose write failed with `error`:
    /// the log takes no more appends (Kafka takes the log directory offline
    /// on an I/O error); reservations after it are refused at commit.
    /// Restart recovery cuts whatever part of the write landed.
    pub fn fail(&mut self, ticket: &AppendTicket, error: &std::io::Error) {
        ::log::error!(
            "{}: write of offsets {}..={} failed: {error}; the partition takes no appends until restart",
            self.dir.display(),
            ticket.result.base_offset,
            ticket.result.last_offset
        );
        self.failed.get_or_insert_with(|| error.to_string());
    }

    /// True while reserved appends are not yet committed (their writes in flight).
    pub fn has_pending(&self) -> bool {
        self.next_offset != self.log_end_offset
    }

    fn maybe_roll(&mut self, bytes: u64, offsets: i64, now_ms: i64) -> Result<(), StorageError> {
        let leo = self.next_offset;
        let cfg = &self.config;
        let seg = &self.active;
        if self.active_reserved == 0 {
            return Ok(());
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
        if full || aged || index_full || overflow {
            ::log::debug!(
                "{}: rolling segment at offset {leo} (size {full}, time {aged}, index {index_full}, offsets {overflow})",
                self.dir.display()
            );
            self.roll()?;
        }
        Ok(())
    }

    /// Closes the active segment for appends and starts a new one whose base
    /// offset is the LEO. Gives the new segment's base offset. (Kafka also
    /// flushes the old segment asynchronously; here it is flushed at close.)
    pub fn roll(&mut self) -> Result<i64, StorageError> {
        let leo = self.next_offset;
        if self.active_reserved == 0 {
            return Ok(self.active.base_offset());
        }
        self.active.finish_time_index()?;
        let seg = self.new_segment(leo)?;
        let mut old = std::mem::replace(&mut self.active, seg);
        old.release_preallocation_at(self.active_reserved)?;
        self.older.push(old);
        self.active_reserved = 0;
        Ok(leo)
    }

    /// Creates the empty segment starting at `base_offset` with this log's
    /// settings: its roll jitter and, with `preallocate`, its disk reserved.
    fn new_segment(&self, base_offset: i64) -> Result<Segment, StorageError> {
        let mut seg = Segment::create(&self.dir, base_offset, self.config.segment_index_bytes)?;
        seg.roll_jitter_ms = self.config.random_segment_jitter();
        if self.config.preallocate {
            seg.preallocate(self.config.segment_bytes.min(MAX_SEGMENT_BYTES))?;
        }
        Ok(seg)
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
    /// since their last flush, then writes `.clean_shutdown` in the partition
    /// directory and fsyncs the directory. The next open trusts the files
    /// (only the tail is checked) and deletes the marker.
    pub fn close(mut self) -> Result<(), StorageError> {
        self.active.finish_time_index()?;
        self.active.release_preallocation()?;
        for seg in self.older.iter_mut() {
            seg.flush_all()?;
        }
        self.active.flush_all()?;
        recovery::write_clean_shutdown_marker(&self.dir)?;
        Ok(())
    }

    /// Gives the header of every batch in the log, oldest first (the offsets
    /// as stored). Used to rebuild producer state at start-up.
    pub fn batch_headers(&self) -> Result<Vec<BatchHeader>, StorageError> {
        let mut out = Vec::new();
        for seg in self.segments() {
            let mut pos = 0;
            while pos < seg.size() {
                let h = seg.read_header(pos)?;
                pos += h.total_size() as u64;
                out.push(h);
            }
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
                    control_marker(&buf)
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

    /// Gives the `.txnindex` files that exist, oldest segment first (to
    /// fsync before a producer-state snapshot covering them is written).
    pub fn txn_index_files(&self) -> Vec<PathBuf> {
        self.segments()
            .map(|seg| {
                self.dir
                    .join(segment_file_name(seg.base_offset(), TXN_INDEX_SUFFIX))
            })
            .filter(|p| p.exists())
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
    /// was just appended; appends its 34-byte entry to the `.txnindex` of the
    /// segment holding the marker. `Io` on failure (KAFKA_STORAGE_ERROR; the
    /// file is rebuilt from the log at the next start-up).
    pub fn append_txn_index(&self, entry: &AbortedTxn) -> Result<(), StorageError> {
        append_txn_index(&self.txn_index_path_for(entry.last_offset), entry)?;
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::error::KafkaCode;
    use crate::storage::batch::testutil::build_batch;
    use crate::storage::batch::validate_batches;
    use crate::storage::segment::segment_file_name;
    use std::os::unix::fs::FileExt;

    pub fn cfg() -> LogConfig {
        LogConfig::default()
    }

    /// Appends one call made of batches with the given record counts.
    pub fn append_batches(
        log: &mut PartitionLog,
        counts: &[i32],
        base_ts: i64,
        value_len: usize,
        now: i64,
    ) -> AppendResult {
        let mut buf = Vec::new();
        for (i, n) in counts.iter().enumerate() {
            // Producers send base offset 0; the broker rewrites it.
            buf.extend(build_batch(0, *n, base_ts + i as i64 * 10, value_len));
        }
        let v = validate_batches(&buf, usize::MAX).unwrap();
        log.append(&buf, &v, 0, now).unwrap()
    }

    #[test]
    fn append_stamps_leader_epoch_and_keeps_crc_valid() {
        for lat in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let mut c = cfg();
            if lat {
                c.message_timestamp_type = TimestampType::LogAppendTime;
            }
            let mut log = PartitionLog::open(dir.path(), c).unwrap();
            let mut buf = build_batch(0, 3, 1_000, 10);
            buf[12..16].copy_from_slice(&(-1i32).to_be_bytes());
            let v = validate_batches(&buf, usize::MAX).unwrap();
            log.append(&buf, &v, 7, 5_000).unwrap();
            let path = dir.path().join(segment_file_name(0, "log"));
            let headers = file_batches(&path);
            assert_eq!(headers[0].partition_leader_epoch, 7);
            assert_eq!(
                headers[0].max_timestamp,
                if lat { 5_000 } else { headers[0].max_timestamp }
            );
        }
    }

    #[test]
    fn nowait_read_of_an_evicted_segment_warms_to_the_blocking_result() {
        use crate::storage::cache;
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(dir.path(), cfg()).unwrap();
        for _ in 0..40 {
            append_batches(&mut log, &[5, 5, 5, 5], 1_000, 2_000, 1_000);
        }
        let want = log.read(77, 300_000, true).unwrap();
        assert!(want.bytes > 0);
        let file = log.active_log_file();
        cache::evict(&file).unwrap();
        let size = file.metadata().unwrap().len();
        if cache::cached_state(&file, 0, size).unwrap() == cache::CacheState::Cached {
            eprintln!("SKIP: the kernel kept the pages after POSIX_FADV_DONTNEED");
            return;
        }
        let hw = log.high_watermark();
        let mut not_cached = 0;
        let got = loop {
            match log.read_bounded_in(77, 300_000, true, hw, ReadMode::NoWait) {
                Ok(r) => break r,
                Err(StorageError::NotCached {
                    file,
                    position,
                    len,
                    ..
                }) => {
                    not_cached += 1;
                    assert!(not_cached < 50, "warming makes no progress");
                    assert!(len > 0 && position + len <= size);
                    cache::warm_blocking(&file, position, len).unwrap();
                }
                Err(e) => panic!("{e}"),
            }
        };
        assert!(not_cached > 0, "an evicted segment read without NotCached");
        assert_eq!(got.regions.len(), 1);
        assert_eq!(got.regions[0].position, want.regions[0].position);
        assert_eq!(got.bytes, want.bytes);
        assert_eq!(got.end_offset, want.end_offset);
        assert_eq!(got.first_batch_bytes, want.first_batch_bytes);
    }

    /// All batches of one `.log` file (validating CRCs).
    pub fn file_batches(path: &Path) -> Vec<BatchHeader> {
        let bytes = std::fs::read(path).unwrap();
        if bytes.is_empty() {
            return Vec::new();
        }
        validate_batches(&bytes, usize::MAX)
            .unwrap()
            .into_iter()
            .map(|b| b.header)
            .collect()
    }

    pub fn region_bytes(r: &ReadResult) -> Vec<u8> {
        let mut out = Vec::new();
        for reg in &r.regions {
            let mut b = vec![0u8; reg.len as usize];
            reg.file.read_exact_at(&mut b, reg.position).unwrap();
            out.extend(b);
        }
        out
    }

    pub fn read_headers(log: &PartitionLog, off: i64, max: u64, min_one: bool) -> Vec<BatchHeader> {
        let r = log.read(off, max, min_one).unwrap();
        let bytes = region_bytes(&r);
        assert_eq!(bytes.len() as u64, r.bytes);
        if bytes.is_empty() {
            return Vec::new();
        }
        validate_batches(&bytes, usize::MAX)
            .unwrap()
            .into_iter()
            .map(|b| b.header)
            .collect()
    }

    #[test]
    fn append_assigns_contiguous_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(dir.path(), cfg()).unwrap();
        assert_eq!(log.log_end_offset(), 0);
        let r1 = append_batches(&mut log, &[3], 1000, 5, 1);
        assert_eq!((r1.base_offset, r1.last_offset, r1.records), (0, 2, 3));
        assert_eq!(r1.log_append_time, -1);
        let r2 = append_batches(&mut log, &[2, 5], 1000, 5, 2);
        assert_eq!((r2.base_offset, r2.last_offset, r2.records), (3, 9, 7));
        let r3 = append_batches(&mut log, &[1], 1000, 5, 3);
        assert_eq!((r3.base_offset, r3.last_offset), (10, 10));
        assert_eq!(log.log_end_offset(), 11);
        assert_eq!(log.high_watermark(), 11);
        assert_eq!(log.log_start_offset(), 0);
        let hs = file_batches(&dir.path().join(segment_file_name(0, "log")));
        let bases: Vec<i64> = hs.iter().map(|h| h.base_offset).collect();
        assert_eq!(bases, vec![0, 3, 5, 10]);
        let lasts: Vec<i64> = hs.iter().map(|h| h.last_offset()).collect();
        assert_eq!(lasts, vec![2, 4, 9, 10]);
        assert_eq!(log.size_bytes(), r1.bytes + r2.bytes + r3.bytes);
        // Empty append is a no-op.
        let r = log.append(&[], &[], 0, 4).unwrap();
        assert_eq!((r.base_offset, r.last_offset, r.bytes), (-1, -1, 0));
        assert_eq!(log.log_end_offset(), 11);
    }

    #[test]
    fn append_rejects_batches_outside_records() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(dir.path(), cfg()).unwrap();
        let b = build_batch(0, 2, 0, 5);
        let v = validate_batches(&b, usize::MAX).unwrap();
        let e = log.append(&b[..b.len() - 1], &v, 0, 0).unwrap_err();
        assert_eq!(e.code(), 2);
        assert_eq!(log.log_end_offset(), 0);
        assert_eq!(log.size_bytes(), 0);
    }

    #[test]
    fn read_whole_batches_max_bytes_and_kip74() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(dir.path(), cfg()).unwrap();
        for _ in 0..5 {
            append_batches(&mut log, &[4], 1000, 20, 0);
        }
        let s = log.size_bytes() / 5; // all batches have the same size
        assert_eq!(read_headers(&log, 0, u64::MAX, false).len(), 5);
        let two = read_headers(&log, 0, 2 * s + s / 2, false);
        assert_eq!(
            two.iter().map(|h| h.base_offset).collect::<Vec<_>>(),
            vec![0, 4]
        );
        let exact = read_headers(&log, 0, 3 * s, false);
        assert_eq!(exact.len(), 3);
        // Offset inside the third batch: starts at that batch.
        let mid = read_headers(&log, 10, 2 * s, false);
        assert_eq!(
            mid.iter().map(|h| h.base_offset).collect::<Vec<_>>(),
            vec![8, 12]
        );
        // KIP-74: first batch even if larger than max_bytes, but not a second.
        let one = read_headers(&log, 5, s - 1, true);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].base_offset, 4);
        assert!(read_headers(&log, 5, s - 1, false).is_empty());
        assert_eq!(read_headers(&log, 5, 1, true).len(), 1);
        // Read at LEO is empty.
        let r = log.read(20, 1000, true).unwrap();
        assert!(r.regions.is_empty());
        assert_eq!((r.bytes, r.log_end_offset, r.high_watermark), (0, 20, 20));
        // Out of range.
        match log.read(21, 1000, true) {
            Err(StorageError::OffsetOutOfRange {
                requested,
                log_start_offset,
                log_end_offset,
            }) => assert_eq!((requested, log_start_offset, log_end_offset), (21, 0, 20)),
            other => panic!("{other:?}"),
        }
        let e = log.read(-1, 1000, true).unwrap_err();
        assert_eq!(e.code(), 1);
    }

    #[test]
    fn big_first_batch_then_small_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(dir.path(), cfg()).unwrap();
        append_batches(&mut log, &[10], 0, 500, 0);
        append_batches(&mut log, &[1], 0, 1, 0);
        let hs = read_headers(&log, 0, 100, true);
        assert_eq!(hs.len(), 1);
        assert_eq!(hs[0].records_count, 10);
    }

    /// Reads the whole log like a consumer; gives every batch header.
    pub fn consume_all(log: &PartitionLog, max_bytes: u64) -> Vec<BatchHeader> {
        let mut out = Vec::new();
        let mut off = log.log_start_offset();
        while off < log.log_end_offset() {
            let hs = read_headers(log, off, max_bytes, true);
            assert!(!hs.is_empty(), "no progress at {off}");
            assert!(hs[0].base_offset <= off && off <= hs[0].last_offset());
            off = hs.last().unwrap().last_offset() + 1;
            out.extend(hs);
        }
        out
    }

    #[test]
    fn segment_roll_and_reads_across_segments() {
        let dir = tempfile::tempdir().unwrap();
        let one = build_batch(0, 2, 0, 30).len() as u64;
        let config = LogConfig {
            segment_bytes: 3 * one,
            ..cfg()
        };
        let mut log = PartitionLog::open(dir.path(), config).unwrap();
        for _ in 0..10 {
            append_batches(&mut log, &[2], 0, 30, 0);
        }
        assert_eq!(log.segment_count(), 4);
        assert_eq!(log.segment_base_offsets(), vec![0, 6, 12, 18]);
        for base in [0, 6, 12, 18] {
            for ext in ["log", "index", "timeindex"] {
                assert!(dir.path().join(segment_file_name(base, ext)).exists());
            }
        }
        assert_eq!(
            file_batches(&dir.path().join(segment_file_name(6, "log"))).len(),
            3
        );
        // A read stops at the end of its segment.
        let hs = read_headers(&log, 2, u64::MAX, true);
        assert_eq!(
            hs.iter().map(|h| h.base_offset).collect::<Vec<_>>(),
            vec![2, 4]
        );
        let all = consume_all(&log, u64::MAX);
        assert_eq!(all.len(), 10);
        for (i, h) in all.iter().enumerate() {
            assert_eq!(h.base_offset, 2 * i as i64);
        }
        for o in 0..20 {
            let hs = read_headers(&log, o, 1, true);
            assert_eq!(hs.len(), 1);
            assert_eq!(hs[0].base_offset, o - o % 2);
        }
        // A batch bigger than segment_bytes goes into an empty segment alone.
        append_batches(&mut log, &[50], 0, 30, 0);
        assert_eq!(log.segment_count(), 5);
        append_batches(&mut log, &[1], 0, 1, 0);
        assert_eq!(log.segment_count(), 6);
    }

    /// Checks every `.index` entry of a segment against the `.log`: entry
    /// (rel, pos) must be the start of the batch whose last offset is base + rel.
    pub fn check_index_file(dir: &Path, base: i64) -> usize {
        let idx = std::fs::read(dir.join(segment_file_name(base, "index"))).unwrap();
        assert_eq!(idx.len() % 8, 0);
        let log = std::fs::read(dir.join(segment_file_name(base, "log"))).unwrap();
        for e in idx.chunks_exact(8) {
            let rel = u32::from_be_bytes(e[..4].try_into().unwrap()) as i64;
            let pos = u32::from_be_bytes(e[4..].try_into().unwrap()) as usize;
            let h = BatchHeader::parse(&log[pos..]).unwrap();
            assert_eq!(h.last_offset(), base + rel);
        }
        idx.len() / 8
    }

    #[test]
    fn index_lookups_after_many_appends() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            index_interval_bytes: 100,
            ..cfg()
        };
        let mut log = PartitionLog::open(dir.path(), config).unwrap();
        for i in 0..300 {
            let n = 1 + (i % 7);
            let counts: Vec<i32> = (0..1 + i % 3).map(|_| n).collect();
            append_batches(&mut log, &counts, 0, (i % 50) as usize, 0);
        }
        let entries = check_index_file(dir.path(), 0);
        assert!(entries > 100, "{entries}");
        let all = consume_all(&log, u64::MAX);
        for h in &all {
            for o in [h.base_offset, h.last_offset()] {
                let got = read_headers(&log, o, 1, true);
                assert_eq!(got[0].base_offset, h.base_offset, "offset {o}");
            }
        }
        // Bounded reads give whole batches only.
        let mut off = 0;
        while off < log.log_end_offset() {
            let r = log.read(off, 700, true).unwrap();
            let hs = read_headers(&log, off, 700, true);
            assert!(r.bytes <= 700 || hs.len() == 1);
            off = hs.last().unwrap().last_offset() + 1;
        }
    }

    #[test]
    fn index_entry_placement_follows_kafka() {
        // Kafka: an entry is added when MORE than index.interval.bytes were
        // appended since the last one; it holds (batch last offset, batch start).
        let dir = tempfile::tempdir().unwrap();
        let s = build_batch(0, 2, 0, 10).len() as u64;
        let config = LogConfig {
            index_interval_bytes: s as u32,
            ..cfg()
        };
        let mut log = PartitionLog::open(dir.path(), config).unwrap();
        for _ in 0..6 {
            append_batches(&mut log, &[2], 0, 10, 0);
        }
        let idx = std::fs::read(dir.path().join(segment_file_name(0, "index"))).unwrap();
        let mut expect = Vec::new();
        for (last, pos) in [(5u32, 2 * s as u32), (9, 4 * s as u32)] {
            expect.extend_from_slice(&last.to_be_bytes());
            expect.extend_from_slice(&pos.to_be_bytes());
        }
        assert_eq!(idx, expect);
        let t = std::fs::read(dir.path().join(segment_file_name(0, "timeindex"))).unwrap();
        let mut texpect = Vec::new();
        texpect.extend_from_slice(&1i64.to_be_bytes());
        texpect.extend_from_slice(&1u32.to_be_bytes());
        // Timestamps never increase after the first batch: one entry only,
        // written at the first index moment with (max ts so far, its offset).
        assert_eq!(t, texpect);
    }

    #[test]
    fn offset_for_timestamp_matches_brute_force() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            index_interval_bytes: 150,
            segment_bytes: 2000,
            ..cfg()
        };
        let mut log = PartitionLog::open(dir.path(), config).unwrap();
        assert_eq!(log.offset_for_timestamp(0).unwrap(), None);
        assert_eq!(log.max_timestamp_offset().unwrap(), None);
        for i in 0..60i64 {
            append_batches(&mut log, &[3], 1000 + i * 100, 10, 0);
        }
        assert!(log.segment_count() > 2);
        let all = consume_all(&log, u64::MAX);
        let brute = |ts: i64| {
            all.iter()
                .find(|h| h.max_timestamp >= ts)
                .map(|h| (h.base_offset, h.max_timestamp))
        };
        for ts in (900..7100).step_by(7) {
            assert_eq!(log.offset_for_timestamp(ts).unwrap(), brute(ts), "ts {ts}");
        }
        assert_eq!(log.offset_for_timestamp(1000).unwrap(), Some((0, 1002)));
        assert_eq!(log.offset_for_timestamp(1103).unwrap(), Some((6, 1202)));
        assert_eq!(log.offset_for_timestamp(99_999).unwrap(), None);
        assert_eq!(log.max_timestamp_offset().unwrap(), Some((179, 6902)));
    }

    #[test]
    fn max_timestamp_offset_picks_largest() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            segment_bytes: 300,
            ..cfg()
        };
        let mut log = PartitionLog::open(dir.path(), config.clone()).unwrap();
        append_batches(&mut log, &[2], 100, 10, 0); // 0..1, max 101
        append_batches(&mut log, &[2], 5000, 10, 0); // 2..3, max 5001
        append_batches(&mut log, &[2], 200, 10, 0); // 4..5
        append_batches(&mut log, &[2], 300, 10, 0); // 6..7
        assert!(log.segment_count() > 1);
        assert_eq!(log.max_timestamp_offset().unwrap(), Some((3, 5001)));
        assert_eq!(log.offset_for_timestamp(150).unwrap(), Some((2, 5001)));
        log.close().unwrap();
        let log = PartitionLog::open(dir.path(), config).unwrap();
        assert_eq!(log.max_timestamp_offset().unwrap(), Some((3, 5001)));
        assert_eq!(log.offset_for_timestamp(150).unwrap(), Some((2, 5001)));
    }

    #[test]
    fn reopen_after_close_keeps_leo() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            segment_bytes: 500,
            index_interval_bytes: 50,
            ..cfg()
        };
        let mut log = PartitionLog::open(dir.path(), config.clone()).unwrap();
        for _ in 0..20 {
            append_batches(&mut log, &[3, 2], 0, 10, 0);
        }
        let segs = log.segment_count();
        let before = consume_all(&log, 1000);
        log.close().unwrap();
        assert!(dir.path().join(".clean_shutdown").exists());
        let mut log = PartitionLog::open(dir.path(), config.clone()).unwrap();
        assert!(!dir.path().join(".clean_shutdown").exists());
        assert_eq!(log.log_end_offset(), 100);
        assert_eq!(log.high_watermark(), 100);
        assert_eq!(log.log_start_offset(), 0);
        assert_eq!(log.segment_count(), segs);
        assert_eq!(consume_all(&log, 1000), before);
        let r = append_batches(&mut log, &[4], 0, 10, 0);
        assert_eq!(r.base_offset, 100);
        assert_eq!(log.log_end_offset(), 104);
        for b in log.segment_base_offsets() {
            check_index_file(dir.path(), b);
        }
    }

    #[test]
    fn log_append_time_rewrites_max_timestamp() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            message_timestamp_type: TimestampType::LogAppendTime,
            ..cfg()
        };
        let mut log = PartitionLog::open(dir.path(), config).unwrap();
        let r = append_batches(&mut log, &[3, 2], 1000, 10, 5555);
        assert_eq!(r.log_append_time, 5555);
        append_batches(&mut log, &[1], 1000, 10, 6666);
        // file_batches validates the CRC of every stored batch.
        let hs = file_batches(&dir.path().join(segment_file_name(0, "log")));
        assert_eq!(hs.len(), 3);
        assert_eq!(hs[0].max_timestamp, 5555);
        assert_eq!(hs[1].max_timestamp, 5555);
        assert_eq!(hs[2].max_timestamp, 6666);
        assert_eq!(hs[0].base_timestamp, 1000);
        assert_eq!(hs[1].base_offset, 3);
        assert!(hs
            .iter()
            .all(|h| h.timestamp_type() == TimestampType::LogAppendTime));
        assert_eq!(log.offset_for_timestamp(6000).unwrap(), Some((5, 6666)));
        assert_eq!(log.max_timestamp_offset().unwrap(), Some((5, 6666)));
    }

    #[test]
    fn time_and_index_based_rolls() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            segment_ms: Some(1000),
            ..cfg()
        };
        let mut log = PartitionLog::open(dir.path(), config).unwrap();
        append_batches(&mut log, &[1], 0, 1, 10_000);
        append_batches(&mut log, &[1], 0, 1, 10_900);
        assert_eq!(log.segment_count(), 1);
        append_batches(&mut log, &[1], 0, 1, 11_001);
        assert_eq!(log.segment_count(), 2);
        assert_eq!(log.segment_base_offsets(), vec![0, 2]);

        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            index_interval_bytes: 1,
            segment_index_bytes: 24, // 3 offset entries, 2 time entries
            ..cfg()
        };
        let mut log = PartitionLog::open(dir.path(), config).unwrap();
        for i in 0..10 {
            append_batches(&mut log, &[1], i * 10, 1, 0);
        }
        assert!(log.segment_count() >= 3, "{}", log.segment_count());
        assert_eq!(consume_all(&log, u64::MAX).len(), 10);
    }

    #[test]
    fn segment_jitter_rolls_earlier() {
        let config = LogConfig {
            segment_ms: Some(1000),
            segment_jitter_ms: 5000,
            ..cfg()
        };
        // Drawn below min(segment.jitter.ms, segment.ms).
        for _ in 0..200 {
            assert!((0..1000).contains(&config.random_segment_jitter()));
        }
        let none = LogConfig {
            segment_jitter_ms: 0,
            ..config.clone()
        };
        assert_eq!(none.random_segment_jitter(), 0);
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(dir.path(), config).unwrap();
        log.active.roll_jitter_ms = 400;
        append_batches(&mut log, &[1], 0, 1, 10_000);
        append_batches(&mut log, &[1], 0, 1, 10_600);
        assert_eq!(log.segment_count(), 1, "600 ms is within 1000 - 400");
        append_batches(&mut log, &[1], 0, 1, 10_601);
        assert_eq!(log.segment_count(), 2, "rolled past 1000 - 400 ms");
    }

    #[test]
    fn preallocated_segments_keep_their_length() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            preallocate: true,
            segment_bytes: 1 << 20,
            ..cfg()
        };
        let mut log = PartitionLog::open(dir.path(), config).unwrap();
        append_batches(&mut log, &[1], 0, 1, 0);
        let path = dir.path().join("00000000000000000000.log");
        let m = std::fs::metadata(&path).unwrap();
        assert!(m.len() < 4096);
        assert!(
            m.blocks() * 512 >= 1 << 20,
            "{} allocated",
            m.blocks() * 512
        );
        log.roll().unwrap();
        let m = std::fs::metadata(&path).unwrap();
        assert!(
            m.blocks() * 512 <= 8192,
            "{} allocated after the roll",
            m.blocks() * 512
        );
        assert_eq!(consume_all(&log, u64::MAX).len(), 1);
    }

    #[test]
    fn flush_and_active_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(dir.path(), cfg()).unwrap();
        append_batches(&mut log, &[1], 0, 1, 0);
        log.flush().unwrap();
        let f = log.active_log_file();
        assert_eq!(f.metadata().unwrap().len(), log.size_bytes());
        f.sync_data().unwrap();
    }
}
