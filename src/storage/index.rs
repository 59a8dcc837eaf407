//! Sparse per-segment indexes, Kafka's on-disk formats:
//!
//! - `.index` (offset index): 8-byte entries, relative offset (u32, offset -
//!   segment base offset) then physical position (u32) in the `.log`. Like
//!   Kafka's `LogSegment.append`, an entry holds the LAST offset of a batch
//!   with the position of the START of that batch.
//! - `.timeindex`: 12-byte entries, timestamp (i64 ms) then relative offset
//!   (u32): (max timestamp so far in the segment, offset of the batch holding
//!   it), appended when that maximum increased.
//!
//! Kafka preallocates index files to `segment.index.bytes` and mmaps them.
//! We do not: entries are appended with `pwrite` at the end of the file and an
//! in-memory `Vec` copy serves lookups, so a file is always exactly
//! `entries * entry_size` bytes long (no trimming on close needed).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

/// Bytes per `.index` entry: relative offset u32 + position u32.
pub const OFFSET_INDEX_ENTRY_BYTES: usize = 8;
/// Bytes per `.timeindex` entry: timestamp i64 + relative offset u32.
pub const TIME_INDEX_ENTRY_BYTES: usize = 12;

fn open_rw(path: &Path) -> io::Result<(File, Vec<u8>)> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    let len = file.metadata()?.len();
    let len = usize::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "index file too large"))?;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, 0)?;
    Ok((file, buf))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        a.copy_from_slice(s);
    }
    u32::from_be_bytes(a)
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    if let Some(s) = b.get(at..at + 8) {
        a.copy_from_slice(s);
    }
    i64::from_be_bytes(a)
}

/// Takes the bytes of a `.index` file; gives its whole entries (a trailing
/// partial entry is left out).
pub fn decode_offset_entries(buf: &[u8]) -> Vec<OffsetEntry> {
    buf.chunks_exact(OFFSET_INDEX_ENTRY_BYTES)
        .map(|c| OffsetEntry {
            relative_offset: u32_at(c, 0),
            position: u32_at(c, 4),
        })
        .collect()
}

/// Takes the bytes of a `.timeindex` file; gives its whole entries (a
/// trailing partial entry is left out).
pub fn decode_time_entries(buf: &[u8]) -> Vec<TimeEntry> {
    buf.chunks_exact(TIME_INDEX_ENTRY_BYTES)
        .map(|c| TimeEntry {
            timestamp: i64_at(c, 0),
            relative_offset: u32_at(c, 8),
        })
        .collect()
}

/// Why a loaded `.index` or `.timeindex` file is not usable (start-up
/// recovery then rebuilds it from the `.log`; never sent to a client).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexDamage {
    /// The file size is not a whole number of entries.
    #[error("{}: size not a multiple of {entry_bytes}", path.display())]
    PartialEntry {
        /// The index file.
        path: PathBuf,
        /// Bytes per entry (8 for `.index`, 12 for `.timeindex`).
        entry_bytes: usize,
    },
    /// An `.index` entry points at or past the end of the `.log`.
    #[error("{}: position {position} past log size {log_size}", path.display())]
    PositionPastLog {
        /// The index file.
        path: PathBuf,
        /// The entry's position (bytes).
        position: u32,
        /// The `.log` size (bytes).
        log_size: u64,
    },
    /// Entries that do not increase (offsets and positions, or timestamps).
    #[error("{}: entries not monotonic", path.display())]
    NotMonotonic {
        /// The index file.
        path: PathBuf,
    },
}

/// One `.index` entry, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetEntry {
    /// Offset relative to the segment base offset (last offset of the batch).
    pub relative_offset: u32,
    /// Byte position in the `.log` of the start of that batch.
    pub position: u32,
}

/// An index entry already in the in-memory copy whose bytes still have to
/// be written to the file (see [`OffsetIndex::append_deferred`]).
#[derive(Debug, Clone)]
pub struct IndexWrite {
    /// The index file.
    pub file: Arc<File>,
    /// Byte position of the entry in the file.
    pub at: u64,
    /// The entry's bytes (8 for `.index`, 12 for `.timeindex`).
    pub bytes: Bytes,
}

impl IndexWrite {
    /// Writes the entry with pwrite(2) on the calling thread.
    pub fn write_now(&self) -> io::Result<()> {
        self.file.write_all_at(&self.bytes, self.at)
    }
}

/// The `.index` file of one segment plus its in-memory copy.
#[derive(Debug)]
pub struct OffsetIndex {
    file: Arc<File>,
    path: PathBuf,
    base_offset: i64,
    entries: Vec<OffsetEntry>,
    max_entries: usize,
    /// Whether the file's length was a multiple of the entry size when loaded.
    loaded_whole: bool,
    dirty: bool,
}

impl OffsetIndex {
    /// Takes the file path, the segment base offset and `max_bytes` (Kafka
    /// `segment.index.bytes`); opens or creates the file and loads its entries
    /// (a trailing partial entry is ignored and reported by [`Self::sanity_check`]).
    pub fn open(path: &Path, base_offset: i64, max_bytes: u32) -> io::Result<OffsetIndex> {
        let (file, buf) = open_rw(path)?;
        let entries = decode_offset_entries(&buf);
        Ok(OffsetIndex {
            file: Arc::new(file),
            path: path.to_path_buf(),
            base_offset,
            entries,
            max_entries: max_bytes as usize / OFFSET_INDEX_ENTRY_BYTES,
            loaded_whole: buf.len() % OFFSET_INDEX_ENTRY_BYTES == 0,
            dirty: false,
        })
    }

    /// Takes the `.log` size (bytes); gives Ok when the loaded file is usable:
    /// whole entries, strictly increasing offsets and positions, every
    /// position below `log_size`. An [`IndexDamage`] means: rebuild it.
    pub fn sanity_check(&self, log_size: u64) -> Result<(), IndexDamage> {
        if !self.loaded_whole {
            return Err(IndexDamage::PartialEntry {
                path: self.path.clone(),
                entry_bytes: OFFSET_INDEX_ENTRY_BYTES,
            });
        }
        let mut prev: Option<OffsetEntry> = None;
        for e in &self.entries {
            if u64::from(e.position) >= log_size {
                return Err(IndexDamage::PositionPastLog {
                    path: self.path.clone(),
                    position: e.position,
                    log_size,
                });
            }
            if let Some(p) = prev {
                if e.relative_offset <= p.relative_offset || e.position <= p.position {
                    return Err(IndexDamage::NotMonotonic {
                        path: self.path.clone(),
                    });
                }
            }
            prev = Some(*e);
        }
        Ok(())
    }

    /// Gives the number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Gives whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Gives whether the index reached `segment.index.bytes / 8` entries
    /// (Kafka rolls the segment then).
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.max_entries
    }

    /// Takes a new `segment.index.bytes` limit (bytes).
    pub fn set_max_bytes(&mut self, max_bytes: u32) {
        self.max_entries = max_bytes as usize / OFFSET_INDEX_ENTRY_BYTES;
    }

    /// Gives the last entry as (absolute offset, position in bytes).
    pub fn last_entry(&self) -> Option<(i64, u32)> {
        self.entries
            .last()
            .map(|e| (self.base_offset + i64::from(e.relative_offset), e.position))
    }

    /// Takes an absolute offset (the last offset of the batch) and the byte
    /// position of that batch's start; appends an entry (pwrite at the end).
    /// Does nothing when the index is full or the offset is not above the
    /// last entry (the index is sparse, skipping keeps lookups correct).
    pub fn append(&mut self, offset: i64, position: u32) -> io::Result<()> {
        match self.append_deferred(offset, position) {
            Some(w) => w.write_now(),
            None => Ok(()),
        }
    }

    /// Like [`Self::append`], but the entry is only added to the in-memory
    /// copy; gives the file write still to make (None: no entry added). The
    /// caller hands it to the shard's I/O thread.
    pub fn append_deferred(&mut self, offset: i64, position: u32) -> Option<IndexWrite> {
        if self.is_full() {
            return None;
        }
        let rel = u32::try_from(offset - self.base_offset).ok()?;
        if let Some(last) = self.entries.last() {
            if rel <= last.relative_offset || position <= last.position {
                return None;
            }
        }
        let mut buf = [0u8; OFFSET_INDEX_ENTRY_BYTES];
        buf[..4].copy_from_slice(&rel.to_be_bytes());
        buf[4..].copy_from_slice(&position.to_be_bytes());
        let at = (self.entries.len() * OFFSET_INDEX_ENTRY_BYTES) as u64;
        self.entries.push(OffsetEntry {
            relative_offset: rel,
            position,
        });
        self.dirty = true;
        Some(IndexWrite {
            file: self.file.clone(),
            at,
            bytes: Bytes::copy_from_slice(&buf),
        })
    }

    /// Takes a target absolute offset; gives the byte position from which a
    /// forward scan finds the batch containing it: the position of the
    /// greatest entry whose offset <= target, else 0.
    ///
    /// Why `<=` is safe: an entry (L, P) says the batch STARTING at P ends at
    /// offset L. Every batch before P ends before that batch's base offset,
    /// which is <= L <= target, so the target's batch starts at P or later
    /// (exactly at P when L == target).
    pub fn lookup(&self, target: i64) -> u32 {
        let rel = target - self.base_offset;
        if rel < 0 {
            return 0;
        }
        let n = self
            .entries
            .partition_point(|e| i64::from(e.relative_offset) <= rel);
        if n == 0 {
            0
        } else {
            self.entries[n - 1].position
        }
    }

    /// Takes a byte position; gives the greatest entry position <= it (a
    /// batch start), if any.
    pub fn floor_position(&self, position: u64) -> Option<u32> {
        let n = self
            .entries
            .partition_point(|e| u64::from(e.position) <= position);
        if n == 0 {
            None
        } else {
            Some(self.entries[n - 1].position)
        }
    }

    /// Takes the path and base offset of the segment a prepared (empty)
    /// index now belongs to; renames it in memory only (the caller renames
    /// the file, whose descriptor stays valid). An index holding entries
    /// keeps its base offset (they are relative to it).
    pub fn rebase(&mut self, path: &Path, base_offset: i64) {
        self.path = path.to_path_buf();
        if self.entries.is_empty() {
            self.base_offset = base_offset;
        }
    }

    /// Takes a byte position of the `.log`; drops entries at or past it and
    /// shrinks the file to match.
    pub fn truncate_to_position(&mut self, position: u64) -> io::Result<()> {
        let keep = self
            .entries
            .partition_point(|e| u64::from(e.position) < position);
        self.truncate_entries(keep)
    }

    /// Removes every entry and empties the file (before a rebuild).
    pub fn reset(&mut self) -> io::Result<()> {
        self.truncate_entries(0)
    }

    fn truncate_entries(&mut self, keep: usize) -> io::Result<()> {
        self.entries.truncate(keep);
        self.file
            .set_len((keep * OFFSET_INDEX_ENTRY_BYTES) as u64)?;
        self.loaded_whole = true;
        self.dirty = true;
        Ok(())
    }

    /// fdatasyncs the file if entries were written since the last flush.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.dirty {
            self.file.sync_data()?;
            self.dirty = false;
        }
        Ok(())
    }
}

/// One `.timeindex` entry, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeEntry {
    /// Max timestamp (ms) seen in the segment up to this entry.
    pub timestamp: i64,
    /// Offset (relative to the segment base) of the batch holding it (its last offset).
    pub relative_offset: u32,
}

/// The `.timeindex` file of one segment plus its in-memory copy.
#[derive(Debug)]
pub struct TimeIndex {
    file: Arc<File>,
    path: PathBuf,
    base_offset: i64,
    entries: Vec<TimeEntry>,
    max_entries: usize,
    loaded_whole: bool,
    dirty: bool,
}

impl TimeIndex {
    /// Takes the file path, the segment base offset and `max_bytes` (Kafka
    /// `segment.index.bytes`); opens or creates the file and loads its entries.
    pub fn open(path: &Path, base_offset: i64, max_bytes: u32) -> io::Result<TimeIndex> {
        let (file, buf) = open_rw(path)?;
        let entries = decode_time_entries(&buf);
        Ok(TimeIndex {
            file: Arc::new(file),
            path: path.to_path_buf(),
            base_offset,
            entries,
            max_entries: max_bytes as usize / TIME_INDEX_ENTRY_BYTES,
            loaded_whole: buf.len() % TIME_INDEX_ENTRY_BYTES == 0,
            dirty: false,
        })
    }

    /// Gives Ok when the loaded file is usable: whole entries, strictly
    /// increasing timestamps, non-decreasing offsets. An [`IndexDamage`]
    /// means: rebuild.
    pub fn sanity_check(&self) -> Result<(), IndexDamage> {
        if !self.loaded_whole {
            return Err(IndexDamage::PartialEntry {
                path: self.path.clone(),
                entry_bytes: TIME_INDEX_ENTRY_BYTES,
            });
        }
        for w in self.entries.windows(2) {
            if w[1].timestamp <= w[0].timestamp || w[1].relative_offset < w[0].relative_offset {
                return Err(IndexDamage::NotMonotonic {
                    path: self.path.clone(),
                });
            }
        }
        Ok(())
    }

    /// Gives the number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Gives whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Gives whether the index reached `segment.index.bytes / 12` entries.
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.max_entries
    }

    /// Takes a new `segment.index.bytes` limit (bytes).
    pub fn set_max_bytes(&mut self, max_bytes: u32) {
        self.max_entries = max_bytes as usize / TIME_INDEX_ENTRY_BYTES;
    }

    /// Gives the last entry as (timestamp ms, absolute offset).
    pub fn last_entry(&self) -> Option<(i64, i64)> {
        self.entries
            .last()
            .map(|e| (e.timestamp, self.base_offset + i64::from(e.relative_offset)))
    }

    /// Takes (max timestamp so far in ms, absolute offset of its batch);
    /// appends an entry when the timestamp is above the last entry's (Kafka
    /// `TimeIndex.maybeAppend`). `skip_full_check` lets the final entry
    /// written at roll/close through a full index (as Kafka does).
    pub fn maybe_append(
        &mut self,
        timestamp: i64,
        offset: i64,
        skip_full_check: bool,
    ) -> io::Result<()> {
        match self.maybe_append_deferred(timestamp, offset, skip_full_check) {
            Some(w) => w.write_now(),
            None => Ok(()),
        }
    }

    /// Like [`Self::maybe_append`], but the entry is only added to the
    /// in-memory copy; gives the file write still to make (None: no entry).
    pub fn maybe_append_deferred(
        &mut self,
        timestamp: i64,
        offset: i64,
        skip_full_check: bool,
    ) -> Option<IndexWrite> {
        if !skip_full_check && self.is_full() {
            return None;
        }
        let rel = u32::try_from(offset - self.base_offset).ok()?;
        if let Some(last) = self.entries.last() {
            if timestamp <= last.timestamp || rel < last.relative_offset {
                return None;
            }
        }
        let mut buf = [0u8; TIME_INDEX_ENTRY_BYTES];
        buf[..8].copy_from_slice(&timestamp.to_be_bytes());
        buf[8..].copy_from_slice(&rel.to_be_bytes());
        let at = (self.entries.len() * TIME_INDEX_ENTRY_BYTES) as u64;
        self.entries.push(TimeEntry {
            timestamp,
            relative_offset: rel,
        });
        self.dirty = true;
        Some(IndexWrite {
            file: self.file.clone(),
            at,
            bytes: Bytes::copy_from_slice(&buf),
        })
    }

    /// Takes a target timestamp (ms); gives the absolute offset of the greatest
    /// entry whose timestamp < target, if any. Every batch up to and including
    /// that offset has max timestamp <= the entry's < target, so the first
    /// batch with max timestamp >= target lies after it.
    pub fn lookup_before(&self, target: i64) -> Option<i64> {
        let n = self.entries.partition_point(|e| e.timestamp < target);
        if n == 0 {
            None
        } else {
            Some(self.base_offset + i64::from(self.entries[n - 1].relative_offset))
        }
    }

    /// As [`OffsetIndex::rebase`]: the path and base offset of the segment
    /// this prepared (empty) index now belongs to, in memory only.
    pub fn rebase(&mut self, path: &Path, base_offset: i64) {
        self.path = path.to_path_buf();
        if self.entries.is_empty() {
            self.base_offset = base_offset;
        }
    }

    /// Takes an absolute offset; drops entries whose offset >= it.
    pub fn truncate_to_offset(&mut self, offset: i64) -> io::Result<()> {
        let rel = offset - self.base_offset;
        let keep = self
            .entries
            .partition_point(|e| i64::from(e.relative_offset) < rel);
        self.truncate_entries(keep)
    }

    /// Removes every entry and empties the file (before a rebuild).
    pub fn reset(&mut self) -> io::Result<()> {
        self.truncate_entries(0)
    }

    fn truncate_entries(&mut self, keep: usize) -> io::Result<()> {
        self.entries.truncate(keep);
        self.file.set_len((keep * TIME_INDEX_ENTRY_BYTES) as u64)?;
        self.loaded_whole = true;
        self.dirty = true;
        Ok(())
    }

    /// fdatasyncs the file if entries were written since the last flush.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.dirty {
            self.file.sync_data()?;
            self.dirty = false;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_index_append_lookup_reload() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("00000000000000000100.index");
        let mut idx = OffsetIndex::open(&p, 100, 1024).unwrap();
        // (last offset of batch, start position of batch)
        idx.append(109, 0).unwrap();
        idx.append(119, 500).unwrap();
        idx.append(129, 1000).unwrap();
        assert_eq!(idx.lookup(99), 0);
        assert_eq!(idx.lookup(105), 0);
        assert_eq!(idx.lookup(109), 0);
        assert_eq!(idx.lookup(110), 0);
        assert_eq!(idx.lookup(119), 500);
        assert_eq!(idx.lookup(125), 500);
        assert_eq!(idx.lookup(10_000), 1000);
        assert_eq!(idx.floor_position(999), Some(500));
        assert_eq!(idx.floor_position(1000), Some(1000));
        // Not monotonic: ignored.
        idx.append(125, 1500).unwrap();
        assert_eq!(idx.len(), 3);
        drop(idx);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 24);
        let mut idx = OffsetIndex::open(&p, 100, 1024).unwrap();
        assert_eq!(idx.len(), 3);
        assert!(idx.sanity_check(1001).is_ok());
        assert!(matches!(
            idx.sanity_check(1000),
            Err(IndexDamage::PositionPastLog { log_size: 1000, .. })
        ));
        assert_eq!(idx.last_entry(), Some((129, 1000)));
        idx.truncate_to_position(600).unwrap();
        assert_eq!(idx.len(), 2);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 16);
    }

    #[test]
    fn offset_index_detects_partial_and_full() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.index");
        std::fs::write(&p, [0u8; 11]).unwrap();
        let idx = OffsetIndex::open(&p, 0, 16).unwrap();
        assert!(idx.sanity_check(100).is_err());
        let p2 = dir.path().join("y.index");
        let mut idx = OffsetIndex::open(&p2, 0, 16).unwrap();
        idx.append(1, 0).unwrap();
        assert!(!idx.is_full());
        idx.append(2, 10).unwrap();
        assert!(idx.is_full());
        idx.append(3, 20).unwrap();
        assert_eq!(idx.len(), 2);
    }

    #[test]
    fn time_index_lookup() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.timeindex");
        let mut t = TimeIndex::open(&p, 50, 1200).unwrap();
        t.maybe_append(1000, 59, false).unwrap();
        t.maybe_append(1000, 69, false).unwrap(); // not increased: skipped
        t.maybe_append(2000, 79, false).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t.lookup_before(1000), None);
        assert_eq!(t.lookup_before(1001), Some(59));
        assert_eq!(t.lookup_before(5000), Some(79));
        drop(t);
        let t = TimeIndex::open(&p, 50, 1200).unwrap();
        assert!(t.sanity_check().is_ok());
        assert_eq!(t.last_entry(), Some((2000, 79)));
    }
}
