//! Log compaction (`cleanup.policy=compact`): keep the latest record per key.
//!
//! A pass over one partition:
//! 1. The cleanable range is the closed segments (never the active one) whose
//!    newest record is older than `min.compaction.lag.ms`.
//! 2. It runs when the dirty share of that range (bytes past the cleaner
//!    checkpoint) reaches `min.cleanable.dirty.ratio`, or when dirty data is
//!    older than `max.compaction.lag.ms`.
//! 3. An offset map (key → latest offset) is built over the range; each
//!    segment is rewritten keeping, per key, only the record at the latest
//!    offset, and dropping tombstones (null values) whose batch is older than
//!    `delete.retention.ms`. Offsets are kept (gaps are fine); unchanged
//!    batches are copied byte for byte, changed ones re-encoded with their
//!    codec (the protocol crate's record codec). Records without a key and
//!    control batches are kept.
//! 5. Transactions (KIP-98, see [`PartitionLog::compact_with_txns`]): the
//!    cleanable range ends before the first offset of the oldest ongoing
//!    transaction; control batches (markers) and the batches of aborted
//!    transactions are kept unchanged, and aborted records do not count as
//!    the latest value of their key. (Kafka also removes aborted data and,
//!    after `delete.retention.ms`, markers; Fjord keeps both, which is
//!    correct but keeps some bytes longer.)
//! 4. Swap, crash-safe: the new log is written to `<base>.log.cleaned` and
//!    fsynced, the segment's index files are removed, then `rename(2)`
//!    atomically replaces the `.log`; a crash leaves the old or the new log
//!    (never neither), and recovery rebuilds missing indexes and removes a
//!    stray `.cleaned` file.
//!
//! The checkpoint (first dirty offset) is kept in the partition's
//! `cleaner-offset` file. A pass rewrites at most `max_segments` segments so
//! the shard can yield between calls; the checkpoint moves only when a pass
//! reached the end of the cleanable range.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::FileExt;

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{Compression, RecordBatchEncoder, RecordEncodeOptions, RecordSet};

use super::batch::BatchHeader;
use super::log::PartitionLog;
use super::segment::{segment_file_name, Segment, INDEX_SUFFIX, TIME_INDEX_SUFFIX};
use super::txn_index::{AbortedTxn, TXN_INDEX_SUFFIX};
use super::{Inconsistency, StorageError};

pub use super::checkpoint::CLEANER_CHECKPOINT;

/// Compaction settings of one partition (Kafka topic config names).
#[derive(Debug, Clone, Copy)]
pub struct CompactionConfig {
    /// `min.compaction.lag.ms`.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`.
    pub max_compaction_lag_ms: i64,
    /// `min.cleanable.dirty.ratio`.
    pub min_cleanable_dirty_ratio: f64,
    /// `delete.retention.ms`.
    pub delete_retention_ms: i64,
}

/// What a compaction pass did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CleanStats {
    /// Segments rewritten.
    pub segments: usize,
    /// `.log` bytes before.
    pub bytes_before: u64,
    /// `.log` bytes after.
    pub bytes_after: u64,
    /// Records dropped because a later record has the same key.
    pub superseded: u64,
    /// Tombstones dropped after `delete.retention.ms`.
    pub tombstones: u64,
}

/// Sets lastOffsetDelta so the (single) batch in `batch` ends at `last_offset`
/// and recomputes its CRC32C (attributes..end).
fn keep_last_offset(batch: &mut [u8], last_offset: i64) {
    if batch.len() < super::RECORD_BATCH_HEADER_BYTES {
        return;
    }
    let base = i64::from_be_bytes([
        batch[0], batch[1], batch[2], batch[3], batch[4], batch[5], batch[6], batch[7],
    ]);
    let delta = (last_offset - base).clamp(0, i32::MAX as i64) as i32;
    batch[23..27].copy_from_slice(&delta.to_be_bytes());
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
}

/// A copy of the batch's header with no records (batchLength 49,
/// recordsCount 0, compression none), CRC recomputed.
fn empty_batch(raw: &[u8]) -> Vec<u8> {
    let mut b = raw[..super::RECORD_BATCH_HEADER_BYTES.min(raw.len())].to_vec();
    if b.len() < super::RECORD_BATCH_HEADER_BYTES {
        return Vec::new();
    }
    b[8..12].copy_from_slice(&49i32.to_be_bytes());
    b[57..61].copy_from_slice(&0i32.to_be_bytes());
    // No records, so no codec: clients would try to decompress an empty
    // payload (Kafka writes these headers uncompressed too).
    let attributes = i16::from_be_bytes([b[21], b[22]]) & !0x7;
    b[21..23].copy_from_slice(&attributes.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

fn compression_of(h: &BatchHeader) -> Compression {
    match h.compression() {
        1 => Compression::Gzip,
        2 => Compression::Snappy,
        3 => Compression::Lz4,
        4 => Compression::Zstd,
        _ => Compression::None,
    }
}

/// What the cleaner needs of one closed segment, taken on the shard so the
/// pass itself can run on another thread: the file is read through its own
/// handle, the segment object stays with the log.
#[derive(Debug, Clone)]
struct SegmentView {
    base: i64,
    path: std::path::PathBuf,
    file: std::sync::Arc<std::fs::File>,
    size: u64,
    next_offset: i64,
}

impl SegmentView {
    fn of(seg: &Segment) -> SegmentView {
        SegmentView {
            base: seg.base_offset(),
            path: seg.log_path().to_path_buf(),
            file: seg.log_file(),
            size: seg.size(),
            next_offset: seg.next_offset(),
        }
    }

    fn header(&self, pos: u64) -> Result<BatchHeader, StorageError> {
        let bad = |what: Inconsistency| StorageError::Inconsistent {
            path: Some(self.path.clone()),
            what,
        };
        if pos + super::RECORD_BATCH_HEADER_BYTES as u64 > self.size {
            return Err(bad(Inconsistency::NoWholeHeader {
                position: pos,
                size: self.size,
            }));
        }
        let mut buf = [0u8; super::RECORD_BATCH_HEADER_BYTES];
        self.file.read_exact_at(&mut buf, pos)?;
        let h = BatchHeader::parse(&buf).map_err(|e| bad(Inconsistency::BadHeader(e)))?;
        let total = h.total_size() as u64;
        if total < super::RECORD_BATCH_HEADER_BYTES as u64 || pos + total > self.size {
            return Err(bad(Inconsistency::BadBatchLength {
                batch_length: h.batch_length,
                position: pos,
            }));
        }
        Ok(h)
    }

    /// The batches of the segment: (position, header).
    fn batches(&self) -> Result<Vec<(u64, BatchHeader)>, StorageError> {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < self.size {
            let h = self.header(pos)?;
            let size = h.total_size() as u64;
            out.push((pos, h));
            pos += size;
        }
        Ok(out)
    }

    fn read_batch(&self, pos: u64, h: &BatchHeader) -> Result<Bytes, StorageError> {
        let mut buf = vec![0u8; h.total_size()];
        self.file.read_exact_at(&mut buf, pos)?;
        Ok(Bytes::from(buf))
    }
}

/// One compaction pass, planned on the shard by
/// [`PartitionLog::compaction_plan`] and run anywhere (it owns everything
/// it reads; [`CompactionJob::run`] blocks on file I/O and fsyncs, so a
/// shard runs it on a thread of its own). Its result goes back to the log
/// with [`PartitionLog::apply_compaction`]. While it runs, the log's closed
/// segments must not change (no retention, no DeleteRecords); appends go on.
#[derive(Debug)]
pub struct CompactionJob {
    dir: std::path::PathBuf,
    config: super::LogConfig,
    views: Vec<SegmentView>,
    first_dirty: i64,
    horizon: i64,
    max_segments: usize,
    aborted_by_pid: HashMap<i64, Vec<(i64, i64)>>,
}

/// What a [`CompactionJob`] did, to apply to the log.
#[derive(Debug)]
pub struct CompactionDone {
    stats: CleanStats,
    /// Rewritten segments, reopened: (base offset, the new segment).
    rewritten: Vec<(i64, Segment)>,
    /// Base offsets of segments emptied by cleaning and removed.
    removed: Vec<i64>,
}

impl CompactionJob {
    fn is_aborted(&self, h: &BatchHeader) -> bool {
        h.is_transactional()
            && self.aborted_by_pid.get(&h.producer_id).is_some_and(|v| {
                v.iter()
                    .any(|(first, last)| *first <= h.base_offset && h.last_offset() <= *last)
            })
    }

    /// Runs the pass: builds the offset map (key → latest offset) over the
    /// cleanable segments, rewrites each changed one (at most
    /// `max_segments`) with the crash-safe swap, reopens it, removes those
    /// left empty (never the first), and moves the cleaner checkpoint when
    /// the whole range was done. Blocking file I/O and fsyncs; `Io` or
    /// `Inconsistent` (KAFKA_STORAGE_ERROR) on failure, with the segments
    /// swapped so far already valid on disk.
    pub fn run(self) -> Result<CompactionDone, StorageError> {
        let mut stats = CleanStats::default();
        // 2. Offset map over the cleanable range: key → latest offset.
        let mut latest: HashMap<Bytes, i64> = HashMap::new();
        for seg in &self.views {
            for (pos, h) in seg.batches()? {
                if h.is_control() || self.is_aborted(&h) {
                    continue;
                }
                let mut b = seg.read_batch(pos, &h)?;
                let set = decode_records(seg, &mut b)?;
                for r in set.records {
                    if let Some(k) = r.key {
                        // Copied: the decoded key is a slice of the whole
                        // batch buffer, which must not stay alive.
                        latest.insert(Bytes::copy_from_slice(&k), r.offset);
                    }
                }
            }
        }
        // 3. Rewrite segments, oldest first.
        let dir = &self.dir;
        let mut finished = true;
        let mut rewritten = Vec::new();
        let mut removed = Vec::new();
        for (idx, seg) in self.views.iter().enumerate() {
            if stats.segments >= self.max_segments.max(1) {
                finished = false;
                break;
            }
            let base = seg.base;
            let before = seg.size;
            let mut out = BytesMut::with_capacity(before as usize);
            let mut changed = false;
            for (pos, h) in seg.batches()? {
                let raw = seg.read_batch(pos, &h)?;
                if h.is_control() || self.is_aborted(&h) {
                    out.extend_from_slice(&raw);
                    continue;
                }
                let mut b = raw.clone();
                let set = decode_records(seg, &mut b)?;
                let n = set.records.len();
                let tombstone_expired = h.max_timestamp < self.horizon;
                let keep: Vec<_> = set
                    .records
                    .into_iter()
                    .filter(|r| match &r.key {
                        None => true,
                        Some(k) => {
                            let newest = latest.get(k).is_none_or(|o| *o == r.offset);
                            if !newest {
                                stats.superseded += 1;
                                return false;
                            }
                            if r.value.is_none() && tombstone_expired {
                                stats.tombstones += 1;
                                return false;
                            }
                            true
                        }
                    })
                    .collect();
                if keep.len() == n {
                    out.extend_from_slice(&raw);
                } else {
                    changed = true;
                    if !keep.is_empty() {
                        let opts = RecordEncodeOptions {
                            version: 2,
                            compression: compression_of(&h),
                        };
                        let start = out.len();
                        RecordBatchEncoder::encode(&mut out, keep.iter(), &opts).map_err(|e| {
                            StorageError::Inconsistent {
                                path: Some(seg.path.clone()),
                                what: Inconsistency::Encode {
                                    reason: e.to_string(),
                                },
                            }
                        })?;
                        // Keep the batch's last offset (and so its last
                        // sequence) as it was, as Kafka's cleaner does, so
                        // idempotent producer state rebuilt from headers
                        // still sees the producer's real last sequence.
                        keep_last_offset(&mut out[start..], h.last_offset());
                    } else if h.producer_id >= 0 {
                        // An idempotent producer's batch emptied by cleaning
                        // stays as a header without records.
                        out.extend_from_slice(&empty_batch(&raw));
                    }
                }
            }
            if !changed {
                continue;
            }
            // 4. Crash-safe swap.
            let cleaned = dir.join(format!("{}.cleaned", segment_file_name(base, "log")));
            {
                let mut f = fs::File::create(&cleaned)?;
                f.write_all(&out)?;
                f.sync_all()?;
            }
            for suffix in [INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
                let p = dir.join(segment_file_name(base, suffix));
                if let Err(e) = fs::remove_file(&p) {
                    if e.kind() != std::io::ErrorKind::NotFound {
                        return Err(e.into());
                    }
                }
            }
            fs::File::open(dir)?.sync_all()?;
            fs::rename(&cleaned, &seg.path)?;
            fs::File::open(dir)?.sync_all()?;
            let fresh = super::recovery::reopen_segment(dir, base, &self.config)?;
            stats.segments += 1;
            stats.bytes_before += before;
            stats.bytes_after += fresh.size();
            if idx > 0 && fresh.size() == 0 {
                // Nothing left: drop the segment (its offsets become a gap,
                // which readers skip). The first segment stays so the log
                // start offset does not move.
                for path in [
                    fresh.log_path().with_extension("log"),
                    fresh.log_path().with_extension("index"),
                    fresh.log_path().with_extension("timeindex"),
                    fresh.log_path().with_extension(TXN_INDEX_SUFFIX),
                ] {
                    let _ = fs::remove_file(path);
                }
                ::log::info!(
                    "{}: compaction left segment {base} without records; its files are deleted",
                    dir.display()
                );
                removed.push(base);
            } else {
                rewritten.push((base, fresh));
            }
        }
        // Only a pass that went through the whole range marks it clean; a
        // pass cut short by `max_segments` is resumed by the next call.
        if finished {
            let cleaned_to = self
                .views
                .last()
                .map_or(self.first_dirty, |v| v.next_offset);
            super::write_offset_file(dir, CLEANER_CHECKPOINT, cleaned_to.max(self.first_dirty))?;
        }
        Ok(CompactionDone {
            stats,
            rewritten,
            removed,
        })
    }
}

impl PartitionLog {
    /// Runs one compaction pass at `now_ms` if the partition needs one; at
    /// most `max_segments` segments are rewritten. Gives what was done.
    pub fn compact(
        &mut self,
        now_ms: i64,
        cfg: CompactionConfig,
        max_segments: usize,
    ) -> Result<CleanStats, StorageError> {
        self.compact_with_txns(now_ms, cfg, max_segments, i64::MAX, &[])
    }

    /// As [`Self::compact`], for a partition with transactions (KIP-98),
    /// on the calling thread: [`Self::compaction_plan`], the job, then
    /// [`Self::apply_compaction`].
    pub fn compact_with_txns(
        &mut self,
        now_ms: i64,
        cfg: CompactionConfig,
        max_segments: usize,
        stable_offset: i64,
        aborted: &[AbortedTxn],
    ) -> Result<CleanStats, StorageError> {
        match self.compaction_plan(now_ms, cfg, max_segments, stable_offset, aborted) {
            None => Ok(CleanStats::default()),
            Some(job) => Ok(self.apply_compaction(job.run()?).0),
        }
    }

    /// Plans a compaction pass at `now_ms` (ms) with the topic's `cfg`, at
    /// most `max_segments` rewrites, for a partition with transactions
    /// (KIP-98): only segments wholly below `stable_offset` (the first
    /// offset of the oldest ongoing transaction, or the last stable offset)
    /// are cleaned, so no record of an undecided transaction is ever
    /// dropped; control batches are kept; batches of the `aborted`
    /// transactions are neither entered in the key map (an aborted record
    /// never supersedes a committed one) nor changed (they are copied as
    /// they are; READ_COMMITTED consumers skip them with the
    /// aborted-transaction index). Gives None when nothing is due (steps 1
    /// and 2 of the module doc); reads only the cleaner checkpoint file.
    pub fn compaction_plan(
        &self,
        now_ms: i64,
        cfg: CompactionConfig,
        max_segments: usize,
        stable_offset: i64,
        aborted: &[AbortedTxn],
    ) -> Option<CompactionJob> {
        let mut aborted_by_pid: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
        for a in aborted {
            aborted_by_pid
                .entry(a.producer_id)
                .or_default()
                .push((a.first_offset, a.last_offset));
        }
        // 1. Cleanable range: closed segments past min.compaction.lag.ms and
        //    below the first undecided transaction.
        let lag = cfg.min_compaction_lag_ms.max(0);
        let cleanable = self
            .older
            .iter()
            .take_while(|s| {
                s.next_offset() <= stable_offset
                    && s.next_offset() <= self.log_end_offset
                    && (s.max_timestamp < 0 || now_ms.saturating_sub(s.max_timestamp) >= lag)
            })
            .count();
        if cleanable == 0 {
            return None;
        }
        let first_dirty = super::read_offset_file(&self.dir, CLEANER_CHECKPOINT).unwrap_or(0);
        let total: u64 = self.older[..cleanable].iter().map(|s| s.size()).sum();
        let dirty_segs: Vec<&Segment> = self.older[..cleanable]
            .iter()
            .filter(|s| s.next_offset() > first_dirty)
            .collect();
        let dirty: u64 = dirty_segs.iter().map(|s| s.size()).sum();
        if total == 0 || dirty == 0 {
            return None;
        }
        let ratio = dirty as f64 / total as f64;
        let overdue = dirty_segs.iter().any(|s| {
            s.max_timestamp >= 0
                && now_ms.saturating_sub(s.max_timestamp) > cfg.max_compaction_lag_ms
        });
        if ratio < cfg.min_cleanable_dirty_ratio && !overdue {
            return None;
        }
        Some(CompactionJob {
            dir: self.dir.clone(),
            config: self.config.clone(),
            views: self.older[..cleanable]
                .iter()
                .map(SegmentView::of)
                .collect(),
            first_dirty,
            horizon: now_ms.saturating_sub(cfg.delete_retention_ms),
            max_segments,
            aborted_by_pid,
        })
    }

    /// Takes the result of a [`CompactionJob`] planned on this log: puts the
    /// rewritten segments in place of the old ones and takes out the removed
    /// ones (matched by base offset). Gives the pass's statistics and the
    /// segments taken out of the log. Their `.log` files were replaced or
    /// deleted by the job, so closing them is the last reference to the old
    /// data and frees its disk: a shard drops them off its reactor.
    pub fn apply_compaction(&mut self, done: CompactionDone) -> (CleanStats, Vec<Segment>) {
        let mut replaced = Vec::new();
        for (base, fresh) in done.rewritten {
            match self.older.iter_mut().find(|s| s.base_offset() == base) {
                Some(slot) => replaced.push(std::mem::replace(slot, fresh)),
                None => ::log::warn!(
                    "{}: compacted segment {base} is no longer in the log",
                    self.dir.display()
                ),
            }
        }
        let (gone, kept): (Vec<Segment>, Vec<Segment>) = std::mem::take(&mut self.older)
            .into_iter()
            .partition(|s| done.removed.contains(&s.base_offset()));
        self.older = kept;
        replaced.extend(gone);
        (done.stats, replaced)
    }
}

/// Decodes the records of one batch read from `seg`; a batch the records
/// codec refuses is an inconsistency of that segment.
fn decode_records(seg: &SegmentView, b: &mut Bytes) -> Result<RecordSet, StorageError> {
    super::records::decode_batch(b).map_err(|e| StorageError::Inconsistent {
        path: Some(seg.path.clone()),
        what: Inconsistency::Decode {
            reason: e.to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{validate_batches, LogConfig};
    use kafka_protocol::records::Record;

    fn record(offset: i64, key: &str, value: Option<&str>, ts: i64) -> Record {
        crate::protocol::plain_record(
            offset,
            ts,
            Some(Bytes::from(key.to_string())),
            value.map(|v| Bytes::from(v.to_string())),
        )
    }

    fn append(
        log: &mut PartitionLog,
        recs: &[(&str, Option<&str>)],
        ts: i64,
        compression: Compression,
    ) {
        let records: Vec<Record> = recs
            .iter()
            .enumerate()
            .map(|(i, (k, v))| record(i as i64, k, *v, ts))
            .collect();
        let buf = crate::storage::batch::testutil::encode_records(&records, compression);
        let v = validate_batches(&buf, usize::MAX).unwrap();
        log.append(&buf, &v, 0, ts).unwrap();
    }

    fn all_records(log: &PartitionLog) -> Vec<(i64, String, Option<String>)> {
        let mut out = Vec::new();
        let mut off = log.log_start_offset();
        while off < log.log_end_offset() {
            let r = log.read(off, 1 << 20, true).unwrap();
            if r.bytes == 0 {
                break;
            }
            let mut bytes = Vec::new();
            for reg in &r.regions {
                let mut b = vec![0u8; reg.len as usize];
                reg.file.read_exact_at(&mut b, reg.position).unwrap();
                bytes.extend(b);
            }
            // Advance by batch headers too: a batch may hold no records.
            let mut pos = 0;
            while pos + 61 <= bytes.len() {
                let h = BatchHeader::parse(&bytes[pos..]).unwrap();
                off = off.max(h.last_offset() + 1);
                pos += h.total_size();
            }
            let mut b = Bytes::from(bytes);
            for set in crate::storage::records::decode_batches(&mut b).unwrap() {
                for r in set.records {
                    off = r.offset + 1;
                    out.push((
                        r.offset,
                        String::from_utf8(r.key.unwrap().to_vec()).unwrap(),
                        r.value.map(|v| String::from_utf8(v.to_vec()).unwrap()),
                    ));
                }
            }
        }
        out
    }

    #[test]
    fn keeps_latest_per_key_and_drops_old_tombstones() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(
            dir.path(),
            LogConfig {
                segment_bytes: 100,
                ..LogConfig::default()
            },
        )
        .unwrap();
        append(
            &mut log,
            &[("a", Some("1")), ("b", Some("1"))],
            1_000,
            Compression::None,
        );
        append(
            &mut log,
            &[("a", Some("2")), ("c", Some("1"))],
            1_000,
            Compression::Gzip,
        );
        append(
            &mut log,
            &[("b", None), ("a", Some("3"))],
            1_000,
            Compression::None,
        );
        append(&mut log, &[("d", Some("1"))], 1_000, Compression::None);
        assert!(log.segment_count() >= 3);
        let before = all_records(&log);
        let cfg = CompactionConfig {
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            min_cleanable_dirty_ratio: 0.0,
            delete_retention_ms: 1_000_000,
        };
        let stats = log.compact(2_000, cfg, usize::MAX).unwrap();
        assert!(stats.segments >= 1 && stats.superseded >= 2, "{stats:?}");
        let after = all_records(&log);
        // Latest value per key, offsets kept; the tombstone for b is still there.
        let a: Vec<_> = after.iter().filter(|r| r.1 == "a").collect();
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].2.as_deref(), Some("3"));
        assert!(after.iter().any(|r| r.1 == "b" && r.2.is_none()));
        assert!(after.iter().all(|r| before.contains(r)));
        // Later: the tombstone is past delete.retention.ms and goes too.
        let cfg = CompactionConfig {
            delete_retention_ms: 10,
            ..cfg
        };
        std::fs::remove_file(dir.path().join(CLEANER_CHECKPOINT)).unwrap();
        log.compact(1_000_000, cfg, usize::MAX).unwrap();
        let after = all_records(&log);
        assert!(!after.iter().any(|r| r.1 == "b"), "{after:?}");
        // Reopening recovers the rewritten segments and their indexes.
        let leo = log.log_end_offset();
        drop(log);
        let log = PartitionLog::open(
            dir.path(),
            LogConfig {
                segment_bytes: 100,
                ..LogConfig::default()
            },
        )
        .unwrap();
        assert_eq!(log.log_end_offset(), leo);
        assert_eq!(all_records(&log), after);
        assert!(!dir.path().read_dir().unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".cleaned")));
    }

    /// Producer `pid` writes one batch with `keys` (sequences from 0) in
    /// `compression`; later `a` and `b` are rewritten and `z` written, and a
    /// compaction pass runs over everything.
    fn idempotent_then_superseded(
        log: &mut PartitionLog,
        keys: &[&str],
        pid: i64,
        compression: Compression,
    ) {
        let recs: Vec<Record> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let mut r = record(i as i64, k, Some("1"), 1_000);
                r.producer_id = pid;
                r.producer_epoch = 0;
                r.sequence = i as i32;
                r
            })
            .collect();
        let buf = crate::storage::batch::testutil::encode_records(&recs, compression);
        let v = validate_batches(&buf, usize::MAX).unwrap();
        log.append(&buf, &v, 0, 1_000).unwrap();
        append(
            log,
            &[("a", Some("2")), ("b", Some("2"))],
            1_000,
            Compression::None,
        );
        append(log, &[("z", Some("1"))], 1_000, Compression::None);
        let cfgc = CompactionConfig {
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            min_cleanable_dirty_ratio: 0.0,
            delete_retention_ms: 1_000_000,
        };
        log.compact(2_000, cfgc, usize::MAX).unwrap();
    }

    #[test]
    fn idempotent_batches_keep_their_last_offset_and_sequence() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = LogConfig {
            segment_bytes: 100,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::open(dir.path(), cfg.clone()).unwrap();
        // Producer 5 writes c, a, b (sequences 0..2); later a and b are rewritten.
        idempotent_then_superseded(&mut log, &["c", "a", "b"], 5, Compression::None);
        let h = log
            .batch_headers()
            .unwrap()
            .into_iter()
            .find(|h| h.producer_id == 5)
            .unwrap();
        assert_eq!(
            (
                h.base_offset,
                h.last_offset(),
                h.base_sequence,
                h.records_count
            ),
            (0, 2, 0, 1)
        );
        // The rewritten header is consistent after a reopen too.
        drop(log);
        let log = PartitionLog::open(dir.path(), cfg).unwrap();
        let h = log
            .batch_headers()
            .unwrap()
            .into_iter()
            .find(|h| h.producer_id == 5)
            .unwrap();
        assert_eq!(h.last_offset(), 2);
    }

    #[test]
    fn emptied_compressed_batch_keeps_no_codec() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = LogConfig {
            segment_bytes: 100,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::open(dir.path(), cfg).unwrap();
        idempotent_then_superseded(&mut log, &["a", "b"], 9, Compression::Lz4);
        let h = log
            .batch_headers()
            .unwrap()
            .into_iter()
            .find(|h| h.producer_id == 9)
            .unwrap();
        assert_eq!(
            (h.records_count, h.compression(), h.last_offset()),
            (0, 0, 1)
        );
        // Readers can decode it (no payload to decompress).
        assert!(!all_records(&log).iter().any(|r| r.0 < 2));
    }

    #[test]
    fn respects_dirty_ratio_and_lag() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(
            dir.path(),
            LogConfig {
                segment_bytes: 150,
                ..LogConfig::default()
            },
        )
        .unwrap();
        for _ in 0..4 {
            append(&mut log, &[("k", Some("v"))], 1_000, Compression::None);
        }
        let cfg = CompactionConfig {
            min_compaction_lag_ms: 10_000,
            max_compaction_lag_ms: i64::MAX,
            min_cleanable_dirty_ratio: 0.5,
            delete_retention_ms: 0,
        };
        // Too young for min.compaction.lag.ms.
        assert_eq!(log.compact(2_000, cfg, usize::MAX).unwrap().segments, 0);
        let cfg = CompactionConfig {
            min_compaction_lag_ms: 0,
            ..cfg
        };
        assert!(log.compact(2_000, cfg, usize::MAX).unwrap().segments >= 1);
        // Nothing dirty any more: no second pass.
        assert_eq!(
            log.compact(3_000, cfg, usize::MAX).unwrap(),
            CleanStats::default()
        );
    }

    #[test]
    fn transactions_are_not_broken_by_compaction() {
        use crate::storage::txn_index::AbortedTxn;
        use crate::storage::ValidatedBatch;
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(
            dir.path(),
            LogConfig {
                segment_bytes: 100,
                ..LogConfig::default()
            },
        )
        .unwrap();
        let txn = |log: &mut PartitionLog, pid: i64, value: &str| {
            let mut r = record(0, "a", Some(value), 1_000);
            r.transactional = true;
            r.producer_id = pid;
            r.producer_epoch = 0;
            r.sequence = 0;
            let mut buf = BytesMut::new();
            let opts = RecordEncodeOptions {
                version: 2,
                compression: Compression::None,
            };
            RecordBatchEncoder::encode(&mut buf, std::iter::once(&r), &opts).unwrap();
            let v = validate_batches(&buf, usize::MAX).unwrap();
            log.append(&buf, &v, 0, 1_000).unwrap().base_offset
        };
        append(&mut log, &[("a", Some("0"))], 1_000, Compression::None); // 0
        append(&mut log, &[("a", Some("1"))], 1_000, Compression::None); // 1
        assert_eq!(txn(&mut log, 5, "2"), 2);
        let marker = crate::shard::partition::encode_marker(5, 0, false, 0, 1_000).unwrap();
        let header = BatchHeader::parse(&marker).unwrap();
        let vb = ValidatedBatch {
            position: 0,
            size: marker.len(),
            header,
        };
        assert_eq!(log.append(&marker, &[vb], 0, 1_000).unwrap().base_offset, 3);
        assert_eq!(txn(&mut log, 6, "3"), 4); // still open
        append(&mut log, &[("z", Some("1"))], 1_000, Compression::None); // 5
        let aborted = [AbortedTxn {
            producer_id: 5,
            first_offset: 2,
            last_offset: 3,
            last_stable_offset: 4,
        }];
        let cfg = CompactionConfig {
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            min_cleanable_dirty_ratio: 0.0,
            delete_retention_ms: 1_000_000,
        };
        let stats = log
            .compact_with_txns(2_000, cfg, usize::MAX, 4, &aborted)
            .unwrap();
        assert_eq!(stats.superseded, 1, "{stats:?}");
        let a: Vec<_> = all_records(&log)
            .into_iter()
            .filter(|r| r.1 == "a")
            .map(|r| (r.0, r.2.unwrap()))
            .collect();
        // The committed latest value (1) survives the aborted one (2), which
        // stays for READ_COMMITTED consumers to skip; the open transaction's
        // record (4) is past the cleanable range.
        assert_eq!(a, vec![(1, "1".into()), (2, "2".into()), (4, "3".into())]);
        let control = log.batch_headers().unwrap();
        assert!(control.iter().any(|h| h.is_control() && h.base_offset == 3));
    }
}
