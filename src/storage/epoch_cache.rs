//! The leader-epoch cache of one partition (Kafka `LeaderEpochFileCache`):
//! the ordered list of (leader epoch, start offset) entries, one per leader
//! epoch that wrote to the log, the start offset being the first offset
//! written in that epoch. Followers and consumers ask for the end offset of
//! an epoch (OffsetForLeaderEpoch, KIP-101 and KIP-320) to find where their
//! copy diverges from the leader's.
//!
//! Persisted in the partition directory as `leader-epoch-checkpoint`, in
//! Kafka's text format (`LeaderEpochCheckpointFile`, checkpoint version 0),
//! one line each, `\n`-terminated:
//!
//! ```text
//! 0                     version
//! 2                     number of entries
//! 0 0                   epoch, space, start offset
//! 3 1207
//! ```
//!
//! Kafka creates the file empty (0 bytes) before the first write; an empty
//! file reads as an empty cache. The file is written whole, to
//! `leader-epoch-checkpoint.tmp` first, fsynced, renamed over the old one,
//! and the directory fsynced ([`LeaderEpochCache::write`]).
//!
//! Invariants of the entries: epochs strictly increase, start offsets never
//! decrease, both are >= 0. The cache is pure memory plus that one file;
//! the log decides when to write it (see `PartitionLog`).

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

/// Name of the checkpoint file in the partition directory (Kafka's).
pub const LEADER_EPOCH_CHECKPOINT: &str = "leader-epoch-checkpoint";

/// Name of the checkpoint being written (Kafka's temporary name too).
pub const LEADER_EPOCH_CHECKPOINT_TMP: &str = "leader-epoch-checkpoint.tmp";

/// The checkpoint format version written and read (Kafka
/// `LeaderEpochCheckpointFile.CURRENT_VERSION`).
const CHECKPOINT_VERSION: i32 = 0;

/// One entry: leader `epoch` started writing at `start_offset` (Kafka
/// `EpochEntry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    /// The leader epoch (>= 0).
    pub epoch: i32,
    /// The first offset written in that epoch (>= 0).
    pub start_offset: i64,
}

/// Why a `leader-epoch-checkpoint` file's text is refused (the log then
/// rebuilds the cache from its batch headers; never sent to a client).
/// Line numbers count from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointFormatError {
    /// The file ends before line `line` (version, count or an entry).
    #[error("line {line} is missing")]
    MissingLine {
        /// The line expected.
        line: usize,
    },
    /// Line `line` is not the number (or `epoch offset` pair) it should be.
    #[error("line {line} is malformed")]
    Malformed {
        /// The line.
        line: usize,
    },
    /// A version other than 0.
    #[error("unknown checkpoint version {version}")]
    UnknownVersion {
        /// The version read.
        version: i32,
    },
    /// More entry lines than the count line says.
    #[error("{expected} entries announced, more found")]
    TooManyEntries {
        /// The count line's value.
        expected: usize,
    },
    /// Entry line `line` has a negative value, an epoch not above the one
    /// before it, or a start offset below the one before it.
    #[error("line {line} breaks the order of the entries")]
    NotMonotonic {
        /// The line.
        line: usize,
    },
}

/// Why the checkpoint could not be read ([`read`]).
#[derive(Debug, thiserror::Error)]
pub enum CheckpointReadError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: io::Error,
    },
    /// The file's text is not a valid checkpoint.
    #[error("{}: {format}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        format: CheckpointFormatError,
    },
}

/// Takes entries; gives the checkpoint file's text (see the module docs).
pub fn encode(entries: &[EpochEntry]) -> String {
    let mut out = format!("{CHECKPOINT_VERSION}\n{}\n", entries.len());
    for e in entries {
        // Writing to a String cannot fail.
        let _ = writeln!(out, "{} {}", e.epoch, e.start_offset);
    }
    out
}

/// Takes a checkpoint file's text; gives its entries, or why it is refused:
/// Kafka's reader rules (version line 0, count line, exactly that many
/// `epoch offset` lines split on whitespace; an empty text is no entries)
/// plus the cache's invariants (see the module docs).
pub fn decode(text: &str) -> Result<Vec<EpochEntry>, CheckpointFormatError> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let mut lines = text.lines();
    let mut number = |line: usize| -> Result<i64, CheckpointFormatError> {
        let l = lines
            .next()
            .ok_or(CheckpointFormatError::MissingLine { line })?;
        l.trim()
            .parse::<i64>()
            .map_err(|_| CheckpointFormatError::Malformed { line })
    };
    let version = number(1)?;
    if version != i64::from(CHECKPOINT_VERSION) {
        return Err(CheckpointFormatError::UnknownVersion {
            version: i32::try_from(version).unwrap_or(i32::MAX),
        });
    }
    let count =
        usize::try_from(number(2)?).map_err(|_| CheckpointFormatError::Malformed { line: 2 })?;
    let mut entries: Vec<EpochEntry> = Vec::with_capacity(count.min(1024));
    for (i, l) in lines.by_ref().take(count).enumerate() {
        let line = i + 3;
        let mut parts = l.split_whitespace();
        let (Some(epoch), Some(start), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(CheckpointFormatError::Malformed { line });
        };
        let (Ok(epoch), Ok(start_offset)) = (epoch.parse::<i32>(), start.parse::<i64>()) else {
            return Err(CheckpointFormatError::Malformed { line });
        };
        let in_order = entries
            .last()
            .is_none_or(|p| epoch > p.epoch && start_offset >= p.start_offset);
        if epoch < 0 || start_offset < 0 || !in_order {
            return Err(CheckpointFormatError::NotMonotonic { line });
        }
        entries.push(EpochEntry {
            epoch,
            start_offset,
        });
    }
    if entries.len() < count {
        return Err(CheckpointFormatError::MissingLine {
            line: entries.len() + 3,
        });
    }
    if lines.any(|l| !l.trim().is_empty()) {
        return Err(CheckpointFormatError::TooManyEntries { expected: count });
    }
    Ok(entries)
}

/// Takes the partition directory; gives the entries of its checkpoint, None
/// when there is no checkpoint file, or why it cannot be used. A leftover
/// `leader-epoch-checkpoint.tmp` (a crash during a write) is removed.
pub fn read(dir: &Path) -> Result<Option<Vec<EpochEntry>>, CheckpointReadError> {
    let tmp = dir.join(LEADER_EPOCH_CHECKPOINT_TMP);
    if tmp.exists() {
        ::log::warn!("{}: removing a half-written checkpoint", tmp.display());
        let _ = std::fs::remove_file(&tmp);
    }
    let path = dir.join(LEADER_EPOCH_CHECKPOINT);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(CheckpointReadError::Io { path, source }),
    };
    decode(&text)
        .map(Some)
        .map_err(|format| CheckpointReadError::Format { path, format })
}

/// The whole `leader-epoch-checkpoint` of a partition as the cache held it
/// when [`LeaderEpochCache::checkpoint`] was called, to write in order
/// with the other writes of the partition (the shard's I/O thread).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochCheckpointWrite {
    dir: PathBuf,
    text: String,
}

impl EpochCheckpointWrite {
    /// Replaces the file with this content: temporary file, fsync, rename,
    /// fsync of the directory (blocking). Errors with the I/O failure (the
    /// file keeps its old content).
    pub fn write(&self) -> io::Result<()> {
        super::write_file_durably(
            &self.dir,
            LEADER_EPOCH_CHECKPOINT,
            LEADER_EPOCH_CHECKPOINT_TMP,
            self.text.as_bytes(),
        )
    }

    /// Gives the partition directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Gives the file's text (Kafka's checkpoint format).
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// The cache: its entries in memory and the directory of its file.
#[derive(Debug)]
pub struct LeaderEpochCache {
    dir: PathBuf,
    entries: Vec<EpochEntry>,
    /// Memory is ahead of the file by a start truncation (retention,
    /// DeleteRecords), which is not written at once: opening the log
    /// applies the log start offset again, so the file's older head entry
    /// gives the same cache (Kafka `truncateFromStartAsyncFlush`).
    dirty: bool,
}

impl LeaderEpochCache {
    /// Takes the partition directory and the entries (in order, as
    /// [`decode`] checks); gives the cache, its file taken as up to date.
    pub fn new(dir: &Path, entries: Vec<EpochEntry>) -> LeaderEpochCache {
        LeaderEpochCache {
            dir: dir.to_path_buf(),
            entries,
            dirty: false,
        }
    }

    /// Gives the entries, oldest epoch first.
    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    /// Gives the latest (largest) epoch, None when the cache is empty
    /// (Kafka `latestEpoch`).
    pub fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|e| e.epoch)
    }

    /// Takes a requested leader epoch and the log end offset; gives (epoch,
    /// end offset) as Kafka's `LeaderEpochFileCache.endOffsetFor` and
    /// `UnifiedLog.endOffsetForEpoch` do:
    /// - `requested` is -1 (UNDEFINED_EPOCH), or the cache is empty, or
    ///   `requested` is above every cached epoch: None (Kafka answers
    ///   UNDEFINED_EPOCH -1 and UNDEFINED_EPOCH_OFFSET -1);
    /// - `requested` is the latest epoch: (latest, `log_end_offset`): the
    ///   epoch still being written to ends at the LEO;
    /// - else, with `next` the first entry whose epoch is above `requested`:
    ///   (e, next's start offset), e being the largest cached epoch <=
    ///   `requested`, or `requested` itself when it is below every cached
    ///   epoch (Kafka's code does this, though its doc comment speaks of
    ///   UNDEFINED_EPOCH_OFFSET: the data of older epochs is gone, and a
    ///   follower should continue from the first known epoch's start).
    pub fn end_offset_for(&self, requested: i32, log_end_offset: i64) -> Option<(i32, i64)> {
        if requested == -1 {
            return None;
        }
        let latest = self.entries.last()?;
        if latest.epoch == requested {
            return Some((requested, log_end_offset));
        }
        let higher = self.entries.partition_point(|e| e.epoch <= requested);
        let next = self.entries.get(higher)?;
        let found = match higher.checked_sub(1).and_then(|i| self.entries.get(i)) {
            Some(floor) => floor.epoch,
            None => requested,
        };
        Some((found, next.start_offset))
    }

    /// Takes a batch's leader epoch and base offset; in memory, adds the
    /// entry (epoch, offset) when the epoch is above the latest one (or the
    /// cache is empty) and both are >= 0 (an offset below the latest
    /// entry's start is raised to it, keeping the order); gives whether it
    /// was added.
    /// An epoch below -1 or -1 itself (no epoch: old data) is ignored, and
    /// so is an epoch at or below the latest one: a leader stamps its
    /// current epoch, and a follower truncates to the leader's epochs
    /// before it fetches (Kafka's `assign` would drop the later entries of
    /// such an epoch; here it never arrives).
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> bool {
        if !self.needs(epoch) || start_offset < 0 {
            return false;
        }
        let start_offset = self
            .entries
            .last()
            .map_or(start_offset, |l| start_offset.max(l.start_offset));
        self.entries.push(EpochEntry {
            epoch,
            start_offset,
        });
        true
    }

    /// Takes a leader epoch; gives whether [`Self::assign`] would add it
    /// (cheap: the append path asks before every append).
    pub fn needs(&self, epoch: i32) -> bool {
        epoch >= 0 && self.latest_epoch().is_none_or(|l| epoch > l)
    }

    /// Takes (epoch, start offset) pairs of batches, in offset order, and
    /// the way the file is written (`write`: at once on the calling thread,
    /// or queued in order for the shard's I/O thread); [`Self::assign`]s
    /// each and, when one was added, hands the whole cache to `write`
    /// ([`Self::checkpoint`]) before giving true. A failed `write` takes the
    /// added entries back out and gives the I/O error.
    pub fn assign_durably(
        &mut self,
        batches: impl IntoIterator<Item = (i32, i64)>,
        write: impl FnOnce(EpochCheckpointWrite) -> io::Result<()>,
    ) -> io::Result<bool> {
        let before = self.entries.len();
        let was_dirty = self.dirty;
        let mut added = false;
        for (epoch, start) in batches {
            added |= self.assign(epoch, start);
        }
        if !added {
            return Ok(false);
        }
        if let Err(e) = write(self.checkpoint()) {
            self.entries.truncate(before);
            self.dirty = was_dirty;
            return Err(e);
        }
        Ok(true)
    }

    /// Takes the new log end offset; removes the entries whose start offset
    /// is >= it (Kafka `truncateFromEnd`); gives whether any was removed.
    /// Memory only.
    pub fn truncate_from_end(&mut self, end_offset: i64) -> bool {
        let keep = self
            .entries
            .partition_point(|e| e.start_offset < end_offset);
        let removed = keep < self.entries.len();
        self.entries.truncate(keep);
        removed
    }

    /// Takes the new log start offset; removes the entries whose start
    /// offset is <= it and puts the last of them back with the new start
    /// as its start offset, so the epoch that holds the log start stays
    /// (Kafka `truncateFromStart`: `truncateFromStart(6)` keeps an entry at
    /// 6). Memory only; marks the file as behind (see [`Self::is_dirty`]).
    /// Gives whether the entries changed.
    pub fn truncate_from_start(&mut self, start_offset: i64) -> bool {
        let n = self
            .entries
            .partition_point(|e| e.start_offset <= start_offset);
        let Some(last) = n.checked_sub(1).and_then(|i| self.entries.get(i)).copied() else {
            return false;
        };
        if n == 1 && last.start_offset == start_offset {
            return false;
        }
        self.entries.drain(..n);
        self.entries.insert(
            0,
            EpochEntry {
                epoch: last.epoch,
                start_offset,
            },
        );
        self.dirty = true;
        true
    }

    /// Removes every entry (memory only; Kafka `clear`). Gives whether
    /// there were any.
    pub fn clear(&mut self) -> bool {
        let had = !self.entries.is_empty();
        self.entries.clear();
        had
    }

    /// Whether the file lags memory by a start truncation.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Writes the whole cache to `leader-epoch-checkpoint` on the calling
    /// thread: temporary file, fsync, rename, fsync of the directory.
    /// Errors with the I/O failure (the file keeps its old content).
    pub fn write(&mut self) -> io::Result<()> {
        let c = EpochCheckpointWrite {
            dir: self.dir.clone(),
            text: encode(&self.entries),
        };
        c.write()?;
        self.dirty = false;
        Ok(())
    }

    /// Gives the whole cache as the file's next content, for a caller that
    /// writes it later, in the order of its calls (the shard's I/O thread:
    /// each write replaces the file, so the last one queued is what it
    /// holds). The file counts as up to date from now; a write that then
    /// fails is reported with [`Self::mark_dirty`].
    pub fn checkpoint(&mut self) -> EpochCheckpointWrite {
        self.dirty = false;
        EpochCheckpointWrite {
            dir: self.dir.clone(),
            text: encode(&self.entries),
        }
    }

    /// Marks the file as behind memory (a queued write failed), so the next
    /// write or the close writes it again.
    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(epoch: i32, start_offset: i64) -> EpochEntry {
        EpochEntry {
            epoch,
            start_offset,
        }
    }

    fn cache(entries: &[(i32, i64)]) -> LeaderEpochCache {
        LeaderEpochCache::new(
            Path::new("/nonexistent"),
            entries.iter().map(|&(a, b)| e(a, b)).collect(),
        )
    }

    #[test]
    fn text_format_is_kafkas() {
        let entries = [e(0, 0), e(3, 1207)];
        assert_eq!(encode(&entries), "0\n2\n0 0\n3 1207\n");
        assert_eq!(encode(&[]), "0\n0\n");
        assert_eq!(decode("0\n2\n0 0\n3 1207\n"), Ok(entries.to_vec()));
        // Kafka splits on any whitespace; a missing final newline is fine.
        assert_eq!(decode("0\n2\n0  0\n3\t1207"), Ok(entries.to_vec()));
        // Kafka creates the file empty before its first write.
        assert_eq!(decode(""), Ok(vec![]));
        assert_eq!(decode("0\n0\n"), Ok(vec![]));
    }

    #[test]
    fn bad_text_is_refused() {
        use CheckpointFormatError as F;
        assert_eq!(decode("1\n0\n"), Err(F::UnknownVersion { version: 1 }));
        assert_eq!(decode("0\n"), Err(F::MissingLine { line: 2 }));
        assert_eq!(decode("0\n2\n0 0\n"), Err(F::MissingLine { line: 4 }));
        assert_eq!(
            decode("0\n1\n0 0\n1 5\n"),
            Err(F::TooManyEntries { expected: 1 })
        );
        assert_eq!(decode("0\nx\n"), Err(F::Malformed { line: 2 }));
        assert_eq!(decode("0\n1\n0 0 0\n"), Err(F::Malformed { line: 3 }));
        assert_eq!(decode("0\n1\n0\n"), Err(F::Malformed { line: 3 }));
        assert_eq!(decode("0\n2\n1 5\n1 6\n"), Err(F::NotMonotonic { line: 4 }));
        assert_eq!(decode("0\n2\n1 5\n2 4\n"), Err(F::NotMonotonic { line: 4 }));
        assert_eq!(decode("0\n1\n-1 0\n"), Err(F::NotMonotonic { line: 3 }));
        assert_eq!(decode("0\n-1\n"), Err(F::Malformed { line: 2 }));
    }

    /// Kafka's `endOffsetFor` cases, one by one.
    #[test]
    fn end_offset_for_follows_kafka() {
        let c = cache(&[(1, 10), (3, 20), (6, 40)]);
        let leo = 55;
        assert_eq!(c.end_offset_for(-1, leo), None, "UNDEFINED_EPOCH");
        assert_eq!(c.end_offset_for(6, leo), Some((6, 55)), "latest: the LEO");
        assert_eq!(c.end_offset_for(3, leo), Some((3, 40)));
        assert_eq!(c.end_offset_for(1, leo), Some((1, 20)));
        // Between cached epochs: the floor epoch, ending where the next starts.
        assert_eq!(c.end_offset_for(4, leo), Some((3, 40)));
        assert_eq!(c.end_offset_for(2, leo), Some((1, 20)));
        // Below every cached epoch: itself, ending at the first start.
        assert_eq!(c.end_offset_for(0, leo), Some((0, 10)));
        // Above every cached epoch: undefined.
        assert_eq!(c.end_offset_for(7, leo), None);
        assert_eq!(cache(&[]).end_offset_for(0, leo), None, "empty cache");
        assert_eq!(cache(&[(0, 0)]).end_offset_for(0, 0), Some((0, 0)));
    }

    #[test]
    fn assign_adds_only_newer_epochs() {
        let mut c = cache(&[]);
        assert!(!c.assign(-1, 0), "no epoch");
        assert!(c.assign(0, 0));
        assert!(!c.assign(0, 5), "same epoch");
        assert!(c.assign(2, 7));
        assert!(!c.assign(1, 9), "older epoch");
        assert!(!c.needs(2) && c.needs(3) && !c.needs(-1));
        assert_eq!(c.entries(), &[e(0, 0), e(2, 7)]);
        assert_eq!(c.latest_epoch(), Some(2));
    }

    #[test]
    fn truncation_from_both_ends() {
        let mut c = cache(&[(0, 0), (1, 10), (2, 20)]);
        assert!(!c.truncate_from_end(21));
        assert!(c.truncate_from_end(20));
        assert_eq!(c.entries(), &[e(0, 0), e(1, 10)]);
        assert!(!c.truncate_from_start(0));
        assert!(!c.is_dirty());
        // The epoch holding the new start keeps it as its start.
        assert!(c.truncate_from_start(15));
        assert_eq!(c.entries(), &[e(1, 15)]);
        assert!(c.is_dirty());
        assert!(!c.truncate_from_start(15));
        assert!(c.truncate_from_start(16));
        assert_eq!(c.entries(), &[e(1, 16)]);
        let mut c = cache(&[(0, 0), (1, 10), (2, 20)]);
        assert!(c.truncate_from_start(10), "exclusive: an entry at 10 stays");
        assert_eq!(c.entries(), &[e(1, 10), e(2, 20)]);
        let mut c = cache(&[(4, 10)]);
        assert!(
            !c.truncate_from_start(5),
            "below the first start: no change"
        );
        assert!(c.truncate_from_end(10));
        assert!(c.entries().is_empty());
        assert!(!c.clear());
    }

    #[test]
    fn file_roundtrip_and_rollback() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().is_none());
        let mut c = LeaderEpochCache::new(dir.path(), Vec::new());
        let now = |w: EpochCheckpointWrite| w.write();
        assert!(c.assign_durably([(0, 0), (0, 3), (2, 5)], now).unwrap());
        assert!(!c.assign_durably([(2, 9), (-1, 10)], now).unwrap());
        let path = dir.path().join(LEADER_EPOCH_CHECKPOINT);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "0\n2\n0 0\n2 5\n");
        assert_eq!(read(dir.path()).unwrap(), Some(vec![e(0, 0), e(2, 5)]));
        // A leftover temporary file is removed; a bad file is an error.
        std::fs::write(dir.path().join(LEADER_EPOCH_CHECKPOINT_TMP), "0\n").unwrap();
        std::fs::write(&path, "0\n3\n0 0\n").unwrap();
        assert!(matches!(
            read(dir.path()),
            Err(CheckpointReadError::Format { .. })
        ));
        assert!(!dir.path().join(LEADER_EPOCH_CHECKPOINT_TMP).exists());
        // A write that fails leaves memory as it was.
        let gone = dir.path().join("gone");
        let mut c = LeaderEpochCache::new(&gone, vec![e(0, 0)]);
        assert!(c.assign_durably([(1, 4)], now).is_err());
        assert_eq!(c.entries(), &[e(0, 0)]);
    }

    #[test]
    fn queued_checkpoints_land_in_the_order_taken() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = LeaderEpochCache::new(dir.path(), Vec::new());
        let mut queue = Vec::new();
        let mut later = |w: EpochCheckpointWrite| {
            queue.push(w);
            Ok(())
        };
        assert!(c.assign_durably([(1, 0)], &mut later).unwrap());
        assert!(c.assign_durably([(3, 7)], &mut later).unwrap());
        // Memory is authoritative at once; nothing is on disk yet.
        assert_eq!(c.entries(), &[e(1, 0), e(3, 7)]);
        assert!(read(dir.path()).unwrap().is_none());
        assert!(!c.is_dirty());
        assert_eq!(queue.len(), 2);
        for w in &queue {
            w.write().unwrap();
        }
        assert_eq!(read(dir.path()).unwrap(), Some(vec![e(1, 0), e(3, 7)]));
        // A queued write that fails is reported back: the close writes again.
        c.mark_dirty();
        assert!(c.is_dirty());
        // A refused queue takes the entry back out.
        assert!(c
            .assign_durably([(4, 9)], |_| Err(io::Error::other("full")))
            .is_err());
        assert_eq!(c.entries(), &[e(1, 0), e(3, 7)]);
        assert!(c.is_dirty(), "the failed queueing keeps the mark");
    }
}
