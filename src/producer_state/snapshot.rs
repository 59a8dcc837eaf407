//! Producer-state snapshot files (`<offset>.snapshot` beside the segments),
//! in Kafka's format (ProducerStateManager, snapshot version 1):
//!
//! ```text
//! version          int16  = 1
//! crc              uint32 CRC32C of every byte after this field
//! entries          int32 count, then per producer:
//!   producer_id              int64
//!   producer_epoch           int16
//!   last_sequence            int32
//!   last_offset              int64
//!   offset_delta             int32   last_sequence - first sequence of the last batch
//!   timestamp                int64   ms, the producer's last batch
//!   coordinator_epoch        int32
//!   current_txn_first_offset int64   -1 when no transaction is open
//! ```
//!
//! The file name is the offset the snapshot was taken at (20 digits): the
//! state covers every batch below it, and start-up replays only the batch
//! headers from there to the log end. A file that is truncated or fails its
//! CRC is ignored (and removed), falling back to an older snapshot or to a
//! full rebuild from the log.

use std::io::Write;
use std::path::{Path, PathBuf};

use bytes::{Buf, BufMut};

use super::partition_txns::PartitionTxns;
use super::{BatchMeta, ProducerEntry, ProducerStateMap};

/// Snapshot format version written and read.
pub const SNAPSHOT_VERSION: i16 = 1;
/// Bytes per entry.
const ENTRY_BYTES: usize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8;
/// File suffix.
pub const SNAPSHOT_SUFFIX: &str = ".snapshot";
/// Suffix of a snapshot being written (removed at start-up if a crash left
/// one behind).
pub const SNAPSHOT_TMP_SUFFIX: &str = ".snapshot.tmp";

/// One producer in a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotEntry {
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// Last sequence of the producer's last batch (-1 when none).
    pub last_sequence: i32,
    /// Offset of the last record of the producer's last batch (-1 when none).
    pub last_offset: i64,
    /// Last sequence minus first sequence of that batch.
    pub offset_delta: i32,
    /// Largest timestamp of the producer's batches (ms).
    pub timestamp: i64,
    /// Coordinator epoch of the producer's last marker (-1 when none).
    pub coordinator_epoch: i32,
    /// First offset of the producer's open transaction, -1 when none.
    pub current_txn_first_offset: i64,
}

/// Why a snapshot could not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SnapshotError {
    /// Shorter than its header or entry count says.
    #[error("truncated snapshot")]
    Truncated,
    /// A version other than 1.
    #[error("unknown snapshot version {0}")]
    Version(i16),
    /// Stored and computed CRC32C differ.
    #[error("snapshot CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Crc {
        /// CRC in the file.
        stored: u32,
        /// CRC of the bytes.
        computed: u32,
    },
}

/// Encodes `entries` as a snapshot file's bytes.
pub fn encode(entries: &[SnapshotEntry]) -> Vec<u8> {
    let mut body = Vec::with_capacity(4 + entries.len() * ENTRY_BYTES);
    body.put_i32(entries.len() as i32);
    for e in entries {
        body.put_i64(e.producer_id);
        body.put_i16(e.producer_epoch);
        body.put_i32(e.last_sequence);
        body.put_i64(e.last_offset);
        body.put_i32(e.offset_delta);
        body.put_i64(e.timestamp);
        body.put_i32(e.coordinator_epoch);
        body.put_i64(e.current_txn_first_offset);
    }
    let mut out = Vec::with_capacity(6 + body.len());
    out.put_i16(SNAPSHOT_VERSION);
    out.put_u32(crc32c::crc32c(&body));
    out.extend_from_slice(&body);
    out
}

/// Decodes a snapshot file's bytes. Errors when truncated, of another
/// version, or when the CRC32C does not match.
pub fn decode(bytes: &[u8]) -> Result<Vec<SnapshotEntry>, SnapshotError> {
    let mut b = bytes;
    if b.remaining() < 10 {
        return Err(SnapshotError::Truncated);
    }
    let version = b.get_i16();
    if version != SNAPSHOT_VERSION {
        return Err(SnapshotError::Version(version));
    }
    let stored = b.get_u32();
    let computed = crc32c::crc32c(b);
    if stored != computed {
        return Err(SnapshotError::Crc { stored, computed });
    }
    let n = b.get_i32();
    if n < 0 || b.remaining() != n as usize * ENTRY_BYTES {
        return Err(SnapshotError::Truncated);
    }
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        out.push(SnapshotEntry {
            producer_id: b.get_i64(),
            producer_epoch: b.get_i16(),
            last_sequence: b.get_i32(),
            last_offset: b.get_i64(),
            offset_delta: b.get_i32(),
            timestamp: b.get_i64(),
            coordinator_epoch: b.get_i32(),
            current_txn_first_offset: b.get_i64(),
        });
    }
    Ok(out)
}

/// The file of the snapshot taken at `offset` in partition directory `dir`.
pub fn path(dir: &Path, offset: i64) -> PathBuf {
    dir.join(format!("{offset:020}{SNAPSHOT_SUFFIX}"))
}

/// Every snapshot file of `dir` as (offset, path), by offset.
pub fn list(dir: &Path) -> Vec<(i64, PathBuf)> {
    scan(dir).0
}

/// One pass over `dir`: the snapshot files as (offset, path), by offset,
/// and the half-written ones.
fn scan(dir: &Path) -> (Vec<(i64, PathBuf)>, Vec<PathBuf>) {
    let mut snapshots = Vec::new();
    let mut partial = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.ends_with(SNAPSHOT_TMP_SUFFIX) {
            partial.push(e.path());
        } else if let Some(off) = name
            .strip_suffix(SNAPSHOT_SUFFIX)
            .and_then(|o| o.parse::<i64>().ok())
        {
            snapshots.push((off, e.path()));
        }
    }
    snapshots.sort();
    (snapshots, partial)
}

/// Writes the snapshot taken at `offset` (temporary file, fsync, rename,
/// fsync of the directory) and removes all but the newest `keep` snapshots.
pub fn write(
    dir: &Path,
    offset: i64,
    entries: &[SnapshotEntry],
    keep: usize,
) -> std::io::Result<()> {
    let final_path = path(dir, offset);
    let tmp = dir.join(format!("{offset:020}{SNAPSHOT_TMP_SUFFIX}"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&encode(entries))?;
        f.sync_data()?;
    }
    std::fs::rename(&tmp, &final_path)?;
    std::fs::File::open(dir)?.sync_all()?;
    let all = list(dir);
    let excess = all.len().saturating_sub(keep.max(1));
    for (_, p) in all.into_iter().take(excess) {
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}

/// The newest readable snapshot taken at or below `max_offset`, as
/// (offset, entries). Snapshots above `max_offset` (the log was truncated
/// below them by recovery), unreadable ones and half-written ones (a crash
/// during `write`) are removed.
pub fn latest(dir: &Path, max_offset: i64) -> Option<(i64, Vec<SnapshotEntry>)> {
    let (snapshots, partial) = scan(dir);
    for p in partial {
        let _ = std::fs::remove_file(p);
    }
    for (off, p) in snapshots.into_iter().rev() {
        if off > max_offset {
            let _ = std::fs::remove_file(&p);
            continue;
        }
        match std::fs::read(&p)
            .map_err(|e| e.to_string())
            .and_then(|b| decode(&b).map_err(|e| e.to_string()))
        {
            Ok(entries) => return Some((off, entries)),
            Err(e) => {
                log::warn!("ignoring producer snapshot {}: {e}", p.display());
                let _ = std::fs::remove_file(&p);
            }
        }
    }
    None
}

/// The snapshot entries of a partition's producer and transaction state,
/// by producer id. Each producer keeps only its last batch, as in Kafka.
pub fn capture(producers: &ProducerStateMap, txns: &PartitionTxns) -> Vec<SnapshotEntry> {
    let mut out: Vec<SnapshotEntry> = producers
        .entries()
        .map(|(pid, e)| {
            let last = e.batches.back();
            SnapshotEntry {
                producer_id: pid,
                producer_epoch: e.epoch,
                last_sequence: last.map_or(-1, |b| b.last_seq),
                last_offset: last.map_or(-1, |b| b.last_offset),
                offset_delta: last.map_or(0, |b| (b.last_offset - b.first_offset) as i32),
                timestamp: e.last_timestamp,
                coordinator_epoch: txns.coordinator_epoch(pid).unwrap_or(-1),
                current_txn_first_offset: txns.ongoing_first_offset(pid).unwrap_or(-1),
            }
        })
        .collect();
    out.sort_by_key(|e| e.producer_id);
    out
}

/// Restores producer and transaction state from snapshot entries.
pub fn restore(
    entries: &[SnapshotEntry],
    producers: &mut ProducerStateMap,
    txns: &mut PartitionTxns,
) {
    for e in entries {
        let mut entry = ProducerEntry {
            epoch: e.producer_epoch,
            batches: Default::default(),
            last_timestamp: e.timestamp,
        };
        if e.last_sequence >= 0 && e.last_offset >= 0 {
            let delta = e.offset_delta.max(0);
            let first_seq = if e.last_sequence >= delta {
                e.last_sequence - delta
            } else {
                // The batch wrapped past i32::MAX.
                (i64::from(i32::MAX) + 1 + i64::from(e.last_sequence) - i64::from(delta)) as i32
            };
            entry.batches.push_back(BatchMeta {
                first_seq,
                last_seq: e.last_sequence,
                first_offset: e.last_offset - i64::from(delta),
                last_offset: e.last_offset,
            });
        }
        producers.insert(e.producer_id, entry);
        txns.restore(
            e.producer_id,
            (e.current_txn_first_offset >= 0).then_some(e.current_txn_first_offset),
            (e.coordinator_epoch >= 0).then_some(e.coordinator_epoch),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pid: i64) -> SnapshotEntry {
        SnapshotEntry {
            producer_id: pid,
            producer_epoch: 2,
            last_sequence: 9,
            last_offset: 109,
            offset_delta: 4,
            timestamp: 1_700_000_000_000,
            coordinator_epoch: 0,
            current_txn_first_offset: -1,
        }
    }

    #[test]
    fn roundtrip_exact_layout_and_crc() {
        let bytes = encode(&[entry(7), entry(8)]);
        assert_eq!(bytes.len(), 2 + 4 + 4 + 2 * ENTRY_BYTES);
        assert_eq!(&bytes[..2], &[0, 1]);
        assert_eq!(&bytes[6..10], &[0, 0, 0, 2]);
        assert_eq!(
            u32::from_be_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]),
            crc32c::crc32c(&bytes[6..])
        );
        assert_eq!(decode(&bytes), Ok(vec![entry(7), entry(8)]));
        let mut bad = bytes.clone();
        bad[20] ^= 1;
        assert!(matches!(decode(&bad), Err(SnapshotError::Crc { .. })));
        assert!(decode(&bytes[..bytes.len() - 1]).is_err());
        assert_eq!(decode(&encode(&[])), Ok(vec![]));
    }

    #[test]
    fn files_newest_readable_at_or_below() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(dir.path(), 10, &[entry(1)], 3).expect("write");
        write(dir.path(), 20, &[entry(2)], 3).expect("write");
        write(dir.path(), 30, &[entry(3)], 3).expect("write");
        assert!(path(dir.path(), 30).ends_with("00000000000000000030.snapshot"));
        // a half-written file from a crash is removed
        let tmp = dir.path().join(format!("{:020}{SNAPSHOT_TMP_SUFFIX}", 35));
        std::fs::write(&tmp, b"half").expect("tmp");
        // a corrupt newest file falls back to the previous one and is removed
        std::fs::write(path(dir.path(), 30), b"garbage").expect("corrupt");
        assert_eq!(latest(dir.path(), 100), Some((20, vec![entry(2)])));
        assert_eq!(list(dir.path()).len(), 2);
        assert!(!tmp.exists());
        // snapshots above the log end are dropped
        assert_eq!(latest(dir.path(), 15), Some((10, vec![entry(1)])));
        assert_eq!(list(dir.path()).len(), 1);
        // only the newest `keep` are kept
        for off in [40, 50, 60] {
            write(dir.path(), off, &[entry(off)], 2).expect("write");
        }
        let offs: Vec<i64> = list(dir.path()).into_iter().map(|(o, _)| o).collect();
        assert_eq!(offs, vec![50, 60]);
    }
}
