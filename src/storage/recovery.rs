//! Opening a partition directory: finding segments, loading or rebuilding
//! their indexes and, after an unclean shutdown, validating the active
//! segment batch by batch and truncating at the first bad or partial batch
//! (Kafka `LogLoader` / `LogSegment.recover`).
//!
//! Rules:
//! - `*.log` files named by a 20-digit base offset are segments, sorted by
//!   base offset. A `<base>.log.swap` (Kafka's log cleaner stopped between
//!   writing a compacted segment and putting it in place) completes the
//!   swap as Kafka's `LogLoader` does: it becomes `<base>.log`, and the
//!   segments it replaced (bases inside its offset range) are deleted; other
//!   `.swap` files (indexes, rebuilt), `*.cleaned` and `*.deleted`
//!   leftovers and the files of a segment prepared for a roll that did not
//!   happen (`*.prepared`, which never hold a record) are deleted; index files (`.index`, `.timeindex`,
//!   `.txnindex`) without a `.log` are deleted; other files are logged and
//!   left. Every deletion is logged with its rule. `.txnindex` contents are
//!   checked against the log by the partition after opening (see
//!   `PartitionLog::sync_txn_indexes`).
//! - Each segment's `.index`/`.timeindex` are loaded; if one has a partial
//!   entry, is not monotonic or points past the `.log`, both are rebuilt by
//!   scanning the segment's batch headers.
//! - Without the `.clean_shutdown` marker, the LAST segment is validated from
//!   byte 0 (header, magic 2, batchLength, whole batch present, CRC32C,
//!   monotonic offsets), truncated at the first bad batch, and its indexes
//!   rebuilt. Other segments (and every segment after a clean shutdown) only
//!   get their tail checked: headers are scanned from the last index entry to
//!   the end of the file and a partial tail is truncated.
//! - The marker is deleted once the log is open.

use std::fs;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::batch::{BatchHeader, CURRENT_MAGIC, MIN_BATCH_LENGTH, RECORD_BATCH_HEADER_BYTES};
use super::checkpoint::{
    CLEANER_CHECKPOINT, LOG_START_CHECKPOINT, PRODUCER_SNAPSHOT_SUFFIX,
    PRODUCER_SNAPSHOT_TMP_SUFFIX,
};
use super::epoch_cache::{LEADER_EPOCH_CHECKPOINT, LEADER_EPOCH_CHECKPOINT_TMP};
use super::log_config::LogConfig;
use super::segment::{
    parse_segment_file_name, Segment, INDEX_SUFFIX, LOG_SUFFIX, MAX_RELATIVE_OFFSET,
    MAX_SEGMENT_BYTES, PREPARED_SUFFIX, TIME_INDEX_SUFFIX,
};
use super::txn_index::TXN_INDEX_SUFFIX;
use super::StorageError;

/// Name of the clean shutdown marker file in a partition directory.
pub const CLEAN_SHUTDOWN_FILE: &str = ".clean_shutdown";

/// Suffixes of temporary files left by an interrupted operation (Kafka log
/// cleaner `.cleaned`, async delete `.deleted`, `.swap` files other than
/// a segment's `.log.swap`, and a segment created ahead of a roll that did
/// not happen, `.prepared`: it holds no record); deleted on open.
const TEMP_SUFFIXES: [&str; 4] = [".cleaned", ".swap", ".deleted", PREPARED_SUFFIX];

/// Suffix of a compacted segment Kafka's cleaner had not put in place yet.
const SWAP_SUFFIX: &str = ".swap";

/// Whether `bytes` is a whole segment of base offset `base`: at least one
/// batch, every batch whole with a good CRC32C, the first at or past `base`.
fn whole_segment(bytes: &[u8], base: i64) -> bool {
    match super::batch::replica_batches(bytes) {
        Ok(batches) => {
            let end = batches.last().map_or(0, |b| b.position + b.size);
            end == bytes.len()
                && batches
                    .first()
                    .is_some_and(|b| b.header.base_offset >= base)
        }
        Err(_) => false,
    }
}

/// Completes the interrupted cleaner swaps of `dir` (Kafka `LogLoader`):
/// each `<base>.log.swap` replaces `<base>.log`; gives the bases completed.
fn complete_swaps(dir: &Path) -> io::Result<Vec<i64>> {
    let mut done = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let Some(target) = name.strip_suffix(SWAP_SUFFIX) else {
            continue;
        };
        if let Some((base, LOG_SUFFIX)) = parse_segment_file_name(target) {
            if !whole_segment(&fs::read(entry.path())?, base) {
                // Not a whole segment: not Kafka's finished copy, deleted as
                // the other leftovers below.
                continue;
            }
            ::log::warn!(
                "{}: completing an interrupted log-cleaner swap: it replaces {target}",
                entry.path().display()
            );
            fs::rename(entry.path(), dir.join(target))?;
            // The replaced segment's indexes point into the old file.
            for suffix in [INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
                let f = dir.join(super::segment::segment_file_name(base, suffix));
                if let Err(e) = fs::remove_file(&f) {
                    if e.kind() != io::ErrorKind::NotFound {
                        return Err(e);
                    }
                }
            }
            done.push(base);
        }
    }
    if !done.is_empty() {
        fs::File::open(dir)?.sync_all()?;
    }
    Ok(done)
}

/// Takes the partition directory; writes the `.clean_shutdown` marker and
/// fsyncs the directory so the marker and all segment file names are durable.
pub fn write_clean_shutdown_marker(dir: &Path) -> io::Result<()> {
    let path = dir.join(CLEAN_SHUTDOWN_FILE);
    let f = fs::File::create(&path)?;
    f.sync_all()?;
    fs::File::open(dir)?.sync_all()
}

/// Takes the partition directory (created if missing) and the config; gives
/// (inactive segments oldest first, active segment), recovered as described
/// in the module docs. Overlapping segments → `Corrupt`; I/O → `Io`.
pub fn recover(dir: &Path, config: &LogConfig) -> Result<(Vec<Segment>, Segment), StorageError> {
    let fresh = !dir.exists();
    fs::create_dir_all(dir)?;
    let marker = dir.join(CLEAN_SHUTDOWN_FILE);
    let clean = marker.exists();
    let swapped = complete_swaps(dir)?;
    let mut log_bases: Vec<i64> = Vec::new();
    let mut index_files: Vec<(i64, std::path::PathBuf)> = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            ::log::warn!("{}: ignoring file with a non-UTF-8 name", dir.display());
            continue;
        };
        if name == CLEAN_SHUTDOWN_FILE {
            continue;
        }
        if TEMP_SUFFIXES.iter().any(|s| name.ends_with(s)) {
            ::log::warn!(
                "{}: deleting a leftover temporary file (an interrupted compaction or deletion, or a segment prepared for a roll)",
                path.display()
            );
            // Already gone is fine: a retired incarnation of this log in
            // the same process may still be unlinking its deleted files.
            match fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e.into()),
                _ => {}
            }
            continue;
        }
        match parse_segment_file_name(&name) {
            Some((base, LOG_SUFFIX)) => log_bases.push(base),
            Some((base, INDEX_SUFFIX | TIME_INDEX_SUFFIX | TXN_INDEX_SUFFIX)) => {
                index_files.push((base, path))
            }
            _ if name == LOG_START_CHECKPOINT || name == CLEANER_CHECKPOINT => {}
            // The topic-id file (written by the shard, KIP-516) and the
            // leader-epoch cache (read by the log, `epoch_cache`).
            _ if name == "partition.metadata"
                || name == LEADER_EPOCH_CHECKPOINT
                || name == LEADER_EPOCH_CHECKPOINT_TMP => {}
            // Producer-state snapshots are read by the partition (producer_state::snapshot).
            _ if name.ends_with(PRODUCER_SNAPSHOT_SUFFIX)
                || name.ends_with(PRODUCER_SNAPSHOT_TMP_SUFFIX) => {}
            _ => ::log::info!("{}: ignoring unknown file", path.display()),
        }
    }
    log_bases.sort_unstable();
    for (base, path) in index_files {
        if log_bases.binary_search(&base).is_err() {
            ::log::warn!(
                "{}: deleting an index without its .log (the segment was deleted)",
                path.display()
            );
            fs::remove_file(&path)?;
        }
    }

    let mut segments: Vec<Segment> = Vec::with_capacity(log_bases.len());
    let last = log_bases.len().saturating_sub(1);
    for (i, base) in log_bases.iter().copied().enumerate() {
        let mut seg = Segment::open_existing(dir, base, config.segment_index_bytes)?;
        if i == last && !clean {
            full_scan(&mut seg, config, true)?;
        } else {
            load_or_rebuild(&mut seg, config)?;
        }
        if let Some(prev) = segments.last() {
            if seg.base_offset() < prev.next_offset()
                && swapped.binary_search(&prev.base_offset()).is_ok()
            {
                // Inside a completed swap's range: one of the segments the
                // compacted one replaced (Kafka deletes them the same way).
                ::log::warn!(
                    "{}: deleting a segment replaced by the compacted segment {} (interrupted log-cleaner swap)",
                    seg.log_path().display(),
                    prev.log_path().display()
                );
                for suffix in [
                    LOG_SUFFIX,
                    INDEX_SUFFIX,
                    TIME_INDEX_SUFFIX,
                    TXN_INDEX_SUFFIX,
                ] {
                    let f = dir.join(super::segment::segment_file_name(seg.base_offset(), suffix));
                    if let Err(e) = fs::remove_file(&f) {
                        if e.kind() != io::ErrorKind::NotFound {
                            return Err(e.into());
                        }
                    }
                }
                continue;
            }
            if seg.base_offset() < prev.next_offset() {
                return Err(StorageError::Corrupt {
                    dir: dir.to_path_buf(),
                    damage: super::LogDamage::OverlappingSegments {
                        segment: seg.log_path().to_path_buf(),
                        base_offset: seg.base_offset(),
                        previous_next_offset: prev.next_offset(),
                    },
                });
            }
        }
        segments.push(seg);
    }
    let mut active = match segments.pop() {
        Some(s) => s,
        None => Segment::create(dir, 0, config.segment_index_bytes)?,
    };
    if active.size() > 0 {
        // After a restart segment.ms counts from the first batch's max
        // timestamp, like Kafka's rollingBasedTimestamp.
        active.roll_base_ms = Some(active.read_header(0)?.max_timestamp);
    }
    if clean {
        fs::remove_file(&marker)?;
    }
    ::log::info!(
        "{}: opened {} segment(s), log end offset {}{}",
        dir.display(),
        segments.len() + 1,
        active.next_offset(),
        if clean {
            ""
        } else if fresh {
            " (new)"
        } else {
            " (recovered after unclean shutdown)"
        }
    );
    Ok((segments, active))
}

/// Where a scan stopped.
struct ScanEnd {
    /// Position after the last good batch.
    end: u64,
    /// Batches accepted.
    batches: u64,
    /// Last offset of the first batch accepted.
    first_last_offset: Option<i64>,
    /// Why the scan stopped before the end of the file, if it did.
    stop_reason: Option<String>,
}

/// Scans batches from `from` (a batch start) to `file_len`, feeding each good
/// one to `Segment::note_batch` (size, next offset, max timestamp, index
/// entries). Stops at the first partial or bad batch.
fn scan(
    seg: &mut Segment,
    from: u64,
    file_len: u64,
    check_crc: bool,
    interval: u32,
) -> io::Result<ScanEnd> {
    let file = seg.log_file();
    let base = seg.base_offset();
    let mut out = ScanEnd {
        end: from,
        batches: 0,
        first_last_offset: None,
        stop_reason: None,
    };
    let mut expected = base;
    let mut hdr = [0u8; RECORD_BATCH_HEADER_BYTES];
    let mut body = Vec::new();
    let mut pos = from;
    while pos < file_len {
        let remain = file_len - pos;
        let reason = 'check: {
            if remain < RECORD_BATCH_HEADER_BYTES as u64 {
                break 'check Some(format!("partial batch header ({remain} bytes)"));
            }
            file.read_exact_at(&mut hdr, pos)?;
            let h = match BatchHeader::parse(&hdr) {
                Ok(h) => h,
                Err(e) => break 'check Some(e.to_string()),
            };
            if h.magic != CURRENT_MAGIC {
                break 'check Some(format!("magic {}", h.magic));
            }
            if h.batch_length < MIN_BATCH_LENGTH {
                break 'check Some(format!("batchLength {}", h.batch_length));
            }
            let total = h.total_size() as u64;
            if total > remain {
                break 'check Some(format!("partial batch ({remain} of {total} bytes)"));
            }
            if pos + total > MAX_SEGMENT_BYTES {
                break 'check Some("segment larger than 2 GiB".into());
            }
            if h.last_offset_delta < 0 || h.base_offset < expected {
                break 'check Some(format!(
                    "offsets not monotonic: base offset {} lastOffsetDelta {} after offset {}",
                    h.base_offset,
                    h.last_offset_delta,
                    expected - 1
                ));
            }
            if h.last_offset() - base > MAX_RELATIVE_OFFSET {
                break 'check Some(format!(
                    "offset {} too far from base {base}",
                    h.last_offset()
                ));
            }
            if check_crc {
                body.resize(total as usize, 0);
                file.read_exact_at(&mut body, pos)?;
                let crc = crc32c::crc32c(body.get(21..).unwrap_or(&[]));
                if crc != h.crc {
                    break 'check Some(format!(
                        "CRC32C mismatch (stored {:#010x}, computed {crc:#010x})",
                        h.crc
                    ));
                }
            }
            seg.note_batch(pos, total, h.last_offset(), h.max_timestamp, interval)?;
            out.first_last_offset.get_or_insert(h.last_offset());
            out.batches += 1;
            expected = h.next_offset();
            pos += total;
            None
        };
        if let Some(r) = reason {
            out.stop_reason = Some(format!("{r} at position {pos}"));
            break;
        }
    }
    out.end = pos;
    Ok(out)
}

/// Reopens a segment whose `.log` was replaced (compaction swap): opens the
/// files and rebuilds both indexes from the log.
pub(crate) fn reopen_segment(
    dir: &Path,
    base_offset: i64,
    config: &LogConfig,
) -> io::Result<Segment> {
    let mut seg = Segment::open_existing(dir, base_offset, config.segment_index_bytes)?;
    full_scan(&mut seg, config, false)?;
    Ok(seg)
}

/// Rebuilds both indexes of `seg` from byte 0 (validating CRCs when
/// `check_crc`) and truncates the `.log` at the first bad or partial batch.
fn full_scan(seg: &mut Segment, config: &LogConfig, check_crc: bool) -> io::Result<()> {
    let file_len = seg.log_file().metadata()?.len();
    seg.offset_index.reset()?;
    seg.time_index.reset()?;
    seg.bytes_since_last_index_entry = 0;
    seg.max_timestamp = -1;
    seg.offset_of_max_timestamp = -1;
    seg.set_size(0);
    seg.set_next_offset(seg.base_offset());
    let r = scan(seg, 0, file_len, check_crc, config.index_interval_bytes)?;
    finish(seg, r, file_len)
}

fn finish(seg: &mut Segment, r: ScanEnd, file_len: u64) -> io::Result<()> {
    if r.end < file_len {
        ::log::warn!(
            "{}: truncating {} bytes ({}), keeping {} bytes up to offset {}",
            seg.log_path().display(),
            file_len - r.end,
            r.stop_reason.as_deref().unwrap_or("unknown"),
            r.end,
            seg.next_offset()
        );
        let next = seg.next_offset();
        seg.truncate_to(r.end, next)?;
    } else {
        seg.set_size(r.end);
    }
    Ok(())
}

/// Loads the segment's indexes, rebuilding them when they fail the sanity
/// checks; then checks the tail from the last index entry to the end of the
/// file, truncating a partial tail.
fn load_or_rebuild(seg: &mut Segment, config: &LogConfig) -> io::Result<()> {
    let file_len = seg.log_file().metadata()?.len();
    let sane = seg
        .offset_index
        .sanity_check(file_len)
        .and_then(|()| seg.time_index.sanity_check());
    if let Err(reason) = sane {
        ::log::warn!("{}: rebuilding indexes: {reason}", seg.log_path().display());
        return full_scan(seg, config, false);
    }
    let (last_index_offset, start) = match seg.offset_index.last_entry() {
        Some((off, pos)) => (Some(off), u64::from(pos)),
        None => (None, 0),
    };
    if let Some((ts, off)) = seg.time_index.last_entry() {
        seg.max_timestamp = ts;
        seg.offset_of_max_timestamp = off;
    }
    seg.bytes_since_last_index_entry = 0;
    seg.set_size(start);
    seg.set_next_offset(seg.base_offset());
    let r = scan(seg, start, file_len, false, config.index_interval_bytes)?;
    let index_matches = last_index_offset.is_none() || r.first_last_offset == last_index_offset;
    if (r.batches == 0 && start < file_len) || !index_matches {
        ::log::warn!(
            "{}: index does not match the log ({}); rebuilding",
            seg.log_path().display(),
            r.stop_reason.as_deref().unwrap_or("offset mismatch")
        );
        return full_scan(seg, config, false);
    }
    finish(seg, r, file_len)?;
    if let Some((_, off)) = seg.time_index.last_entry() {
        if off >= seg.next_offset() {
            ::log::warn!(
                "{}: time index points past the log end; rebuilding",
                seg.log_path().display()
            );
            return full_scan(seg, config, false);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::log::tests::{
        append_batches, check_index_file, consume_all, file_batches, read_headers,
    };
    use crate::storage::log::PartitionLog;
    use crate::storage::segment::segment_file_name;
    use std::fs::OpenOptions;

    fn small_index_cfg() -> LogConfig {
        LogConfig {
            index_interval_bytes: 64,
            ..LogConfig::default()
        }
    }

    /// Builds a log with 20 batches of 3 records, dropped without close (crash).
    fn crashed_log(dir: &Path, config: &LogConfig) -> Vec<BatchHeader> {
        let mut log = PartitionLog::open(dir, config.clone()).unwrap();
        for i in 0..20 {
            append_batches(&mut log, &[3], i * 100, 10, 0);
        }
        let hs = consume_all(&log, u64::MAX);
        drop(log);
        hs
    }

    fn log_path(dir: &Path, base: i64) -> std::path::PathBuf {
        dir.join(segment_file_name(base, "log"))
    }

    #[test]
    fn unclean_truncated_mid_batch_recovers_to_last_whole_batch() {
        let dir = tempfile::tempdir().unwrap();
        let config = small_index_cfg();
        crashed_log(dir.path(), &config);
        let p = log_path(dir.path(), 0);
        let len = std::fs::metadata(&p).unwrap().len();
        let one = len / 20;
        // Cut in the middle of batch 18 (offsets 54..56).
        let cut = 18 * one + one / 2;
        OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(cut)
            .unwrap();
        let mut log = PartitionLog::open(dir.path(), config.clone()).unwrap();
        assert_eq!(log.log_end_offset(), 54);
        assert_eq!(log.size_bytes(), 18 * one);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 18 * one);
        check_index_file(dir.path(), 0);
        let r = append_batches(&mut log, &[5], 0, 10, 0);
        assert_eq!(r.base_offset, 54);
        let hs = file_batches(&p);
        assert_eq!(hs.len(), 19);
        assert_eq!(hs[18].base_offset, 54);
        assert_eq!(consume_all(&log, 300).len(), 19);
        // Cut inside the header of the last batch too.
        drop(log);
        let len = std::fs::metadata(&p).unwrap().len();
        OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(len - r.bytes + 10)
            .unwrap();
        let log = PartitionLog::open(dir.path(), config).unwrap();
        assert_eq!(log.log_end_offset(), 54);
    }

    #[test]
    fn unclean_corrupt_byte_truncates_at_that_batch() {
        let dir = tempfile::tempdir().unwrap();
        let config = small_index_cfg();
        crashed_log(dir.path(), &config);
        let p = log_path(dir.path(), 0);
        let len = std::fs::metadata(&p).unwrap().len();
        let one = len / 20;
        // Flip a record byte of the last batch (covered by the CRC).
        let mut bytes = std::fs::read(&p).unwrap();
        bytes[(len - 5) as usize] ^= 0x55;
        std::fs::write(&p, &bytes).unwrap();
        let log = PartitionLog::open(dir.path(), config.clone()).unwrap();
        assert_eq!(log.log_end_offset(), 57);
        assert_eq!(log.size_bytes(), 19 * one);
        drop(log);
        // Corrupt batch 5 (offsets 15..17): everything from there is dropped.
        let mut bytes = std::fs::read(&p).unwrap();
        bytes[(5 * one + 30) as usize] ^= 0x01;
        std::fs::write(&p, &bytes).unwrap();
        let log = PartitionLog::open(dir.path(), config).unwrap();
        assert_eq!(log.log_end_offset(), 15);
        assert_eq!(file_batches(&p).len(), 5);
        check_index_file(dir.path(), 0);
        let idx_entries = std::fs::metadata(dir.path().join(segment_file_name(0, "index")))
            .unwrap()
            .len();
        assert!(idx_entries > 0);
        assert_eq!(read_headers(&log, 14, 1, true)[0].base_offset, 12);
    }

    #[test]
    fn clean_shutdown_trusts_files_but_truncates_partial_tail() {
        let dir = tempfile::tempdir().unwrap();
        let config = small_index_cfg();
        let mut log = PartitionLog::open(dir.path(), config.clone()).unwrap();
        for _ in 0..10 {
            append_batches(&mut log, &[2], 0, 10, 0);
        }
        let size = log.size_bytes();
        log.close().unwrap();
        let p = log_path(dir.path(), 0);
        // Garbage after a clean close: a partial header.
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        std::io::Write::write_all(&mut f, &[0u8; 30]).unwrap();
        drop(f);
        let log = PartitionLog::open(dir.path(), config).unwrap();
        assert_eq!(log.log_end_offset(), 20);
        assert_eq!(log.size_bytes(), size);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), size);
    }

    #[test]
    fn deleted_index_is_rebuilt_identically() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            index_interval_bytes: 64,
            segment_bytes: 1500,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::open(dir.path(), config.clone()).unwrap();
        for i in 0..40 {
            append_batches(&mut log, &[1 + (i % 4) as i32], i * 50, 10, 0);
        }
        let bases = log.segment_base_offsets();
        assert!(bases.len() >= 3);
        let all = consume_all(&log, u64::MAX);
        log.close().unwrap();
        let idx0 = dir.path().join(segment_file_name(0, "index"));
        let tidx0 = dir.path().join(segment_file_name(0, "timeindex"));
        let idx_active = dir
            .path()
            .join(segment_file_name(*bases.last().unwrap(), "index"));
        let before0 = std::fs::read(&idx0).unwrap();
        let before_t0 = std::fs::read(&tidx0).unwrap();
        let before_active = std::fs::read(&idx_active).unwrap();
        assert!(!before0.is_empty());
        std::fs::remove_file(&idx0).unwrap();
        std::fs::remove_file(&idx_active).unwrap();
        let log = PartitionLog::open(dir.path(), config.clone()).unwrap();
        assert_eq!(std::fs::read(&idx0).unwrap(), before0);
        assert_eq!(std::fs::read(&tidx0).unwrap(), before_t0);
        assert_eq!(std::fs::read(&idx_active).unwrap(), before_active);
        assert_eq!(consume_all(&log, u64::MAX), all);
        for h in &all {
            assert_eq!(read_headers(&log, h.last_offset(), 1, true)[0], *h);
        }
        assert_eq!(
            log.offset_for_timestamp(1000).unwrap(),
            Some((all[20].base_offset, 1000))
        );
        drop(log);
        // A garbage index (partial entry) and a non-monotonic one are rebuilt too.
        std::fs::write(&idx0, [1u8; 13]).unwrap();
        let mut bad = before_active.clone();
        bad.extend_from_slice(&before_active[..8]);
        std::fs::write(&idx_active, &bad).unwrap();
        let log = PartitionLog::open(dir.path(), config).unwrap();
        assert_eq!(std::fs::read(&idx0).unwrap(), before0);
        assert_eq!(consume_all(&log, u64::MAX), all);
        for b in log.segment_base_offsets() {
            check_index_file(dir.path(), b);
        }
    }

    #[test]
    fn index_pointing_past_log_is_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let config = small_index_cfg();
        let mut log = PartitionLog::open(dir.path(), config.clone()).unwrap();
        for _ in 0..10 {
            append_batches(&mut log, &[2], 0, 10, 0);
        }
        log.close().unwrap();
        let idx = dir.path().join(segment_file_name(0, "index"));
        let mut bytes = std::fs::read(&idx).unwrap();
        bytes.extend_from_slice(&100u32.to_be_bytes());
        bytes.extend_from_slice(&1_000_000u32.to_be_bytes());
        std::fs::write(&idx, &bytes).unwrap();
        let log = PartitionLog::open(dir.path(), config).unwrap();
        assert_eq!(log.log_end_offset(), 20);
        check_index_file(dir.path(), 0);
        assert_eq!(consume_all(&log, u64::MAX).len(), 10);
    }

    #[test]
    fn unclean_multi_segment_and_stray_files() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            segment_bytes: 400,
            ..small_index_cfg()
        };
        let hs = crashed_log(dir.path(), &config);
        std::fs::write(dir.path().join("00000000000000000000.log.swap"), b"x").unwrap();
        std::fs::write(dir.path().join("00000000000000000003.index.cleaned"), b"x").unwrap();
        std::fs::write(dir.path().join("00000000000099999999.index"), b"x").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        let log = PartitionLog::open(dir.path(), config).unwrap();
        assert!(log.segment_count() > 2);
        assert_eq!(log.log_end_offset(), 60);
        assert_eq!(log.log_start_offset(), 0);
        assert_eq!(consume_all(&log, u64::MAX), hs);
        assert!(!dir.path().join("00000000000000000000.log.swap").exists());
        assert!(!dir
            .path()
            .join("00000000000000000003.index.cleaned")
            .exists());
        assert!(!dir.path().join("00000000000099999999.index").exists());
        assert!(dir.path().join("notes.txt").exists());
    }

    /// Kafka's cleaner stopped after it wrote the compacted copy of the
    /// first two segments as `.log.swap` and renamed the originals to
    /// `.deleted`: the copy is the only one, and recovery puts it in place.
    #[test]
    fn an_interrupted_kafka_swap_is_completed_not_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            segment_bytes: 400,
            ..small_index_cfg()
        };
        let hs = crashed_log(dir.path(), &config);
        let mut bases: Vec<i64> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| {
                let n = e.unwrap().file_name().into_string().unwrap();
                parse_segment_file_name(&n)
                    .filter(|(_, s)| *s == LOG_SUFFIX)
                    .map(|(b, _)| b)
            })
            .collect();
        bases.sort_unstable();
        assert!(bases.len() > 3);
        let (first, second) = (bases[0], bases[1]);
        // The compacted copy of both: the two files' batches, concatenated.
        let mut copy = std::fs::read(log_path(dir.path(), first)).unwrap();
        copy.extend(std::fs::read(log_path(dir.path(), second)).unwrap());
        std::fs::write(
            dir.path()
                .join(format!("{}.swap", segment_file_name(first, "log"))),
            &copy,
        )
        .unwrap();
        for b in [first, second] {
            let p = log_path(dir.path(), b);
            std::fs::rename(&p, p.with_extension("log.deleted")).unwrap();
        }
        let log = PartitionLog::open(dir.path(), config.clone()).unwrap();
        assert_eq!(log.log_end_offset(), 60);
        assert_eq!(consume_all(&log, u64::MAX), hs);
        drop(log);
        // The same with the originals still in place (stopped one step
        // earlier): the one replaced beside the copy is deleted.
        let dir = tempfile::tempdir().unwrap();
        let hs = crashed_log(dir.path(), &config);
        let mut copy = std::fs::read(log_path(dir.path(), first)).unwrap();
        copy.extend(std::fs::read(log_path(dir.path(), second)).unwrap());
        std::fs::write(
            dir.path()
                .join(format!("{}.swap", segment_file_name(first, "log"))),
            &copy,
        )
        .unwrap();
        let log = PartitionLog::open(dir.path(), config).unwrap();
        assert_eq!(consume_all(&log, u64::MAX), hs);
        assert!(!log_path(dir.path(), second).exists());
    }

    #[test]
    fn missing_dir_is_created_and_empty_active_segment_after_roll() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("topic-0");
        let mut log = PartitionLog::open(&p, LogConfig::default()).unwrap();
        append_batches(&mut log, &[3], 0, 1, 0);
        assert_eq!(log.roll().unwrap(), 3);
        drop(log);
        let mut log = PartitionLog::open(&p, LogConfig::default()).unwrap();
        assert_eq!(log.segment_base_offsets(), vec![0, 3]);
        assert_eq!(log.log_end_offset(), 3);
        assert_eq!(append_batches(&mut log, &[1], 0, 1, 0).base_offset, 3);
    }
}
