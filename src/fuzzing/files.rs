//! Files read at start-up: a partition directory (segments, indexes,
//! checkpoints, producer snapshots) opened and recovered, and each
//! checkpoint or metadata file reader on its own.

use std::path::Path;

use super::{parts, ScratchDir, Violation};
use crate::cluster::controller::load_or_create_meta;
use crate::cluster::import::{read_partition_metadata, PARTITION_METADATA_FILE};
use crate::producer_state::partition_txns::PartitionTxns;
use crate::producer_state::snapshot;
use crate::producer_state::ProducerStateMap;
use crate::shard::partition::rebuild_state;
use crate::storage::checkpoint::{
    hw_checkpoint_file, parse_kafka_checkpoint, read_hw_checkpoints, read_log_start_checkpoint,
    CLEANER_CHECKPOINT, LOG_START_CHECKPOINT,
};
use crate::storage::cleaner::CompactionConfig;
use crate::storage::epoch_cache::{self, LeaderEpochCache, LEADER_EPOCH_CHECKPOINT};
use crate::storage::index::{OffsetIndex, TimeIndex};
use crate::storage::recovery::CLEAN_SHUTDOWN_FILE;
use crate::storage::segment::{segment_file_name, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX};
use crate::storage::txn_index::{read_txn_index, TXN_INDEX_SUFFIX};
use crate::storage::{BatchHeader, LogConfig, PartitionLog, StorageError};

/// Broker time of the compaction pass (ms).
const NOW_MS: i64 = 1_700_000_000_000;

/// What a part's tag names in a partition directory (see [`partition_dir`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartKind {
    /// `<base>.log` (the part starts with the base offset, `i64` big-endian;
    /// a tag of 0x80 or more: every batch's CRC is fixed first).
    Log = 0,
    /// `<base>.index` (likewise).
    Index = 1,
    /// `<base>.timeindex` (likewise).
    TimeIndex = 2,
    /// `<base>.txnindex` (likewise).
    TxnIndex = 3,
    /// `<offset>.snapshot`, a producer-state snapshot (likewise).
    ProducerSnapshot = 4,
    /// `leader-epoch-checkpoint`.
    LeaderEpochCheckpoint = 5,
    /// `log-start-offset`.
    LogStartOffset = 6,
    /// `cleaner-offset`.
    CleanerOffset = 7,
    /// `partition.metadata`.
    PartitionMetadata = 8,
    /// `.clean_shutdown` (the part's bytes are ignored).
    CleanShutdown = 9,
}

impl PartKind {
    /// The kind of tag `tag` (`tag % 10`).
    pub fn of(tag: u8) -> PartKind {
        match tag % 10 {
            0 => PartKind::Log,
            1 => PartKind::Index,
            2 => PartKind::TimeIndex,
            3 => PartKind::TxnIndex,
            4 => PartKind::ProducerSnapshot,
            5 => PartKind::LeaderEpochCheckpoint,
            6 => PartKind::LogStartOffset,
            7 => PartKind::CleanerOffset,
            8 => PartKind::PartitionMetadata,
            _ => PartKind::CleanShutdown,
        }
    }

    /// The file name this part is written to, and its bytes.
    fn file(self, bytes: &[u8]) -> (String, &[u8]) {
        let based = |suffix: &str| {
            let (base, rest) = match bytes.split_first_chunk::<8>() {
                Some((b, rest)) => (i64::from_be_bytes(*b) & i64::MAX, rest),
                None => (0, bytes),
            };
            (segment_file_name(base, suffix), rest)
        };
        match self {
            PartKind::Log => based(LOG_SUFFIX),
            PartKind::Index => based(INDEX_SUFFIX),
            PartKind::TimeIndex => based(TIME_INDEX_SUFFIX),
            PartKind::TxnIndex => based(TXN_INDEX_SUFFIX),
            PartKind::ProducerSnapshot => based("snapshot"),
            PartKind::LeaderEpochCheckpoint => (LEADER_EPOCH_CHECKPOINT.into(), bytes),
            PartKind::LogStartOffset => (LOG_START_CHECKPOINT.into(), bytes),
            PartKind::CleanerOffset => (CLEANER_CHECKPOINT.into(), bytes),
            PartKind::PartitionMetadata => (PARTITION_METADATA_FILE.into(), bytes),
            PartKind::CleanShutdown => (CLEAN_SHUTDOWN_FILE.into(), &[]),
        }
    }
}

fn io(what: &str) -> impl Fn(std::io::Error) -> Violation + '_ {
    move |e| format!("scratch directory: {what}: {e}")
}

/// Takes a partition directory as tagged parts (a [`PartKind`] tag byte, a
/// `u32` length, the bytes; see `fuzzing::encode_parts`), writes it to a
/// scratch directory and opens it as the shard does at start-up:
/// `PartitionLog::open` (recovery of every segment and index, the
/// leader-epoch checkpoint, the log start checkpoint), then the producer and
/// transaction state (`rebuild_state`: producer snapshots, `.txnindex`
/// files, the control batches), reads at the log start and at each batch,
/// the time lookups and the epoch lookups. Invariants: a log whose open
/// scanned it whole (unclean stop, one segment) reads back (every header,
/// every read inside its file); opening it again after an unclean stop
/// finds the same batches; a compaction pass (the cleaner
/// reads `cleaner-offset` and decodes every record) leaves a log with the
/// same end that recovers to itself.
pub fn partition_dir(data: &[u8]) -> Result<(), Violation> {
    let scratch = ScratchDir::new().map_err(io("create"))?;
    let dir = scratch.0.join("t-0");
    std::fs::create_dir_all(&dir).map_err(io("create"))?;
    let mut clean = false;
    for (tag, bytes) in parts(data) {
        let kind = PartKind::of(tag);
        clean |= kind == PartKind::CleanShutdown;
        let (name, bytes) = kind.file(bytes);
        let bytes = if kind == PartKind::Log && tag >= 0x80 {
            super::with_fixed_crcs(bytes)
        } else {
            bytes.to_vec()
        };
        std::fs::write(dir.join(name), bytes).map_err(io("write"))?;
    }
    let cfg = LogConfig {
        preallocate: false,
        ..LogConfig::default()
    };
    let Ok(log) = PartitionLog::open(&dir, cfg.clone()) else {
        return Ok(());
    };
    // Only the last segment of a log opened after an unclean stop is
    // scanned whole; a clean shutdown, and the segments before the last,
    // are trusted up to their last index entry (as Kafka trusts them), so a
    // batch damaged before it is found at read time, not at open.
    let first = read_back(&log, !clean)?;
    drop(log);
    let mut log = PartitionLog::open(&dir, cfg.clone())
        .map_err(|e| format!("a recovered log does not open again: {e}"))?;
    let second = read_back(&log, true)?;
    if let (false, Some(a), Some(b)) = (clean, &first, &second) {
        if a != b {
            return Err(format!(
                "reopening changed the log: {} batches to LEO {} became {} batches to LEO {}",
                a.1.len(),
                a.0,
                b.1.len(),
                b.0
            ));
        }
    }
    let compaction = CompactionConfig {
        min_compaction_lag_ms: 0,
        max_compaction_lag_ms: i64::MAX,
        min_cleanable_dirty_ratio: 0.0,
        delete_retention_ms: 0,
    };
    if log.compact(NOW_MS, compaction, 4).is_err() {
        return Ok(());
    }
    let compacted = read_back(&log, true)?;
    if let (Some(c), Some(b)) = (&compacted, &second) {
        if c.0 != b.0 {
            return Err(format!(
                "compaction moved the log end from {} to {}",
                b.0, c.0
            ));
        }
    }
    drop(log);
    let log = PartitionLog::open(&dir, cfg)
        .map_err(|e| format!("a compacted log does not open again: {e}"))?;
    let reopened = read_back(&log, true)?;
    if let (Some(r), Some(c)) = (&reopened, &compacted) {
        if r != c {
            return Err(format!(
                "a compacted log recovered differently: {} batches became {}",
                c.1.len(),
                r.1.len()
            ));
        }
    }
    Ok(())
}

/// An open log's end and batch headers.
type ReadBack = Option<(i64, Vec<BatchHeader>)>;

/// Reads an open log back; gives its end and its batch headers. With
/// `scanned` (the open scanned the log whole: after an unclean stop, one
/// segment), a header that does not read, a batch out of order or a read
/// that fails is a violation; otherwise (trusted bytes) it gives None.
fn read_back(log: &PartitionLog, scanned: bool) -> Result<ReadBack, Violation> {
    let checked = scanned && log.segment_count() == 1;
    match read_back_checked(log) {
        Ok(r) => Ok(Some(r)),
        Err(e) if checked => Err(e),
        Err(_) => Ok(None),
    }
}

/// [`read_back`], every failure a violation.
fn read_back_checked(log: &PartitionLog) -> Result<(i64, Vec<BatchHeader>), Violation> {
    let headers = log
        .batch_headers()
        .map_err(|e| format!("the headers of a recovered log do not read: {e}"))?;
    let (start, end) = (log.log_start_offset(), log.log_end_offset());
    let mut prev = i64::MIN;
    for h in &headers {
        if h.base_offset < prev || h.last_offset() >= end {
            return Err(format!(
                "batch {}..={} out of order or past the log end {end}",
                h.base_offset,
                h.last_offset()
            ));
        }
        prev = h.next_offset();
    }
    let mut offsets: Vec<i64> = headers.iter().take(16).map(|h| h.base_offset).collect();
    offsets.extend([start, end]);
    for offset in offsets.into_iter().filter(|o| (start..=end).contains(o)) {
        match log.read(offset, 1 << 20, true) {
            Ok(r) => {
                for region in &r.regions {
                    let len = region.file.metadata().map_or(0, |m| m.len());
                    if region.position + region.len > len {
                        return Err(format!(
                            "a read at {offset} gives bytes {}..{} of a {len}-byte file",
                            region.position,
                            region.position + region.len
                        ));
                    }
                }
            }
            Err(StorageError::OffsetOutOfRange { .. }) if offset < start || offset > end => {}
            Err(e) => {
                return Err(format!(
                    "a read at offset {offset} in [{start}, {end}]: {e}"
                ))
            }
        }
    }
    for ts in [-2, -1, 0, NOW_MS, i64::MAX] {
        let _ = log.offset_for_timestamp(ts);
    }
    let _ = log.max_timestamp_offset();
    for (epoch, _) in log.epoch_entries() {
        let _ = log.end_offset_for_epoch(epoch);
    }
    let _ = log.txn_index_entries_below(end);
    let _ = rebuild_state("t", 0, log);
    Ok((end, headers))
}

/// Takes a selector byte (`% 10`) and a file's bytes; reads them as the
/// selected file: 0 `leader-epoch-checkpoint` (`epoch_cache::decode`, then
/// the cache's lookups and truncations), 1 Kafka's offset checkpoint format
/// (`replication-offset-checkpoint`, `parse_kafka_checkpoint`), 2 the
/// data directory's `replication-offset-checkpoint*` files
/// (`read_hw_checkpoints`), 3 `log-start-offset` / `cleaner-offset`, 4
/// `partition.metadata`, 5 `meta.properties`, 6 a producer-state snapshot
/// (`producer_state::snapshot::decode`, restored into producer and transaction state),
/// 7 a `.txnindex`, 8 an `.index`, 9 a `.timeindex`. A checkpoint that
/// decodes must encode back to the same entries.
pub fn checkpoint_files(data: &[u8]) -> Result<(), Violation> {
    let Some((&selector, bytes)) = data.split_first() else {
        return Ok(());
    };
    let text = || String::from_utf8_lossy(bytes);
    match selector % 10 {
        0 => {
            if let Ok(entries) = epoch_cache::decode(&text()) {
                let again = epoch_cache::decode(&epoch_cache::encode(&entries));
                if again.as_ref() != Ok(&entries) {
                    return Err(format!("epoch checkpoint {entries:?} re-read as {again:?}"));
                }
                let last = entries.last().map_or(0, |e| e.start_offset);
                let mut cache = LeaderEpochCache::new(Path::new("/nonexistent"), entries);
                let epochs: Vec<i32> = cache.entries().iter().map(|e| e.epoch).collect();
                for e in epochs {
                    let _ = cache.end_offset_for(e, last.saturating_add(1));
                    let _ = cache.end_offset_for(e.saturating_add(1), last);
                }
                let _ = cache.latest_epoch();
                cache.truncate_from_start(last / 2);
                cache.truncate_from_end(last / 3);
            }
        }
        1 => {
            if let Ok(entries) = parse_kafka_checkpoint(&text()) {
                let encoded = crate::storage::checkpoint::encode_checkpoint(&entries);
                let again = parse_kafka_checkpoint(&String::from_utf8_lossy(&encoded));
                if again.as_ref() != Ok(&entries) {
                    return Err(format!(
                        "offset checkpoint {entries:?} re-read as {again:?}"
                    ));
                }
            }
        }
        2 => in_scratch(&hw_checkpoint_file(0), bytes, |dir| {
            let _ = read_hw_checkpoints(dir);
        })?,
        3 => in_scratch(LOG_START_CHECKPOINT, bytes, |dir| {
            let _ = read_log_start_checkpoint(dir);
        })?,
        4 => in_scratch(PARTITION_METADATA_FILE, bytes, |dir| {
            let _ = read_partition_metadata(dir);
        })?,
        5 => in_scratch("meta.properties", bytes, |dir| {
            let _ = load_or_create_meta(dir, 1, Some("fuzz-cluster"));
        })?,
        6 => {
            if let Ok(entries) = snapshot::decode(bytes) {
                let mut producers = ProducerStateMap::default();
                let mut txns = PartitionTxns::default();
                snapshot::restore(&entries, &mut producers, &mut txns);
                let _ = snapshot::encode(&snapshot::capture(&producers, &txns));
            }
        }
        7 => in_scratch("00000000000000000000.txnindex", bytes, |dir| {
            let _ = read_txn_index(&dir.join("00000000000000000000.txnindex"));
        })?,
        8 => in_scratch("00000000000000000000.index", bytes, |dir| {
            if let Ok(index) =
                OffsetIndex::open(&dir.join("00000000000000000000.index"), 0, 1 << 20)
            {
                let _ = index.sanity_check(1 << 30);
                for target in [0, 1, 1000, i64::MAX] {
                    let _ = index.lookup(target);
                }
                let _ = index.floor_position(4096);
            }
        })?,
        _ => in_scratch("00000000000000000000.timeindex", bytes, |dir| {
            let path = dir.join("00000000000000000000.timeindex");
            if let Ok(index) = TimeIndex::open(&path, 0, 1 << 20) {
                let _ = index.sanity_check();
                for target in [i64::MIN, -1, 0, NOW_MS, i64::MAX] {
                    let _ = index.lookup_before(target);
                }
            }
        })?,
    }
    Ok(())
}

/// Writes `bytes` as `name` in a scratch directory and calls `read` on it.
fn in_scratch(name: &str, bytes: &[u8], read: impl FnOnce(&Path)) -> Result<(), Violation> {
    let scratch = ScratchDir::new().map_err(io("create"))?;
    std::fs::write(scratch.0.join(name), bytes).map_err(io("write"))?;
    read(&scratch.0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first input the `partition_dir` fuzzer stopped on: one segment
    /// with a clean-shutdown marker, a batch length damaged at byte 2581
    /// and an index entry past it. The clean open trusts the segment up to
    /// its index entry, as Kafka trusts a cleanly shut down log, so the
    /// damage is found when the batch is read; the unclean reopen scans the
    /// segment whole and truncates there.
    #[test]
    fn a_clean_shutdown_trusts_the_segment_up_to_its_index() {
        let input = include_bytes!(
            "../../tests/fuzz/seeds/partition_dir/crash-clean-shutdown-damaged-before-index"
        );
        assert_eq!(partition_dir(input), Ok(()));
        let scratch = ScratchDir::new().unwrap();
        let dir = scratch.0.join("t-0");
        std::fs::create_dir_all(&dir).unwrap();
        for (tag, bytes) in parts(input) {
            let (name, bytes) = PartKind::of(tag).file(bytes);
            std::fs::write(dir.join(name), bytes).unwrap();
        }
        let cfg = LogConfig {
            preallocate: false,
            ..LogConfig::default()
        };
        let trusted = PartitionLog::open(&dir, cfg.clone()).unwrap();
        assert!(trusted.batch_headers().is_err());
        drop(trusted);
        let scanned = PartitionLog::open(&dir, cfg).unwrap();
        let headers = scanned.batch_headers().unwrap();
        let kept = std::fs::metadata(dir.join("00000000000000000000.log"))
            .unwrap()
            .len();
        let sizes: u64 = headers.iter().map(|h| h.total_size() as u64).sum();
        assert!(kept <= 2581, "{kept} bytes kept");
        assert_eq!(sizes, kept);
    }
}
