//! One log segment: `<base offset, 20 digits>.log` plus its `.index` and
//! `.timeindex` (Kafka `LogSegment`).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::batch::{BatchHeader, RECORD_BATCH_HEADER_BYTES};
use super::cache;
use super::index::{IndexWrite, OffsetIndex, TimeIndex};
use super::{Inconsistency, StorageError};

/// Suffix of segment data files.
pub const LOG_SUFFIX: &str = "log";
/// Suffix of offset index files.
pub const INDEX_SUFFIX: &str = "index";
/// Suffix of time index files.
pub const TIME_INDEX_SUFFIX: &str = "timeindex";

/// Suffix of the files of a segment created ahead of a roll (see
/// [`Segment::create_prepared`]); recovery deletes leftovers.
pub const PREPARED_SUFFIX: &str = ".prepared";

/// Takes a partition directory and a segment file suffix ("log", "index",
/// "timeindex"); gives the path of the prepared segment's file:
/// `next-segment.<suffix>.prepared` (not a segment name, so nothing reads
/// it as part of the log until the roll renames it).
pub fn prepared_path(dir: &Path, suffix: &str) -> PathBuf {
    dir.join(format!("next-segment.{suffix}{PREPARED_SUFFIX}"))
}

/// Takes a partition directory and a base offset; renames the prepared
/// segment's files to that base offset's names (`<base>.log`, `.index`,
/// `.timeindex`). Blocking. Errors with the first failed rename. The names
/// are not made durable here: the partition's next flush (a flush policy,
/// or a clean shutdown) fsyncs the directory before it counts any record
/// of the new segment as flushed, and the roll also has [`sync_dir`] run
/// in the background, as Kafka flushes a rolled log's directory from its
/// scheduler (`LocalLog.flush`, `needsFlushParentDir`), not on the append
/// path; an fsync there waited behind the disk's writeback and held every
/// append queued after it.
pub fn name_prepared_segment(dir: &Path, base_offset: i64) -> io::Result<()> {
    for suffix in [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
        std::fs::rename(
            prepared_path(dir, suffix),
            dir.join(segment_file_name(base_offset, suffix)),
        )?;
    }
    Ok(())
}

/// Takes a directory; fsyncs it (its entries, such as a roll's new names,
/// made durable). Blocking. Errors with the open or the fsync.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Takes a partition directory; removes the files of a prepared segment
/// that never became part of the log (they hold no record). Gives how many
/// were removed; a missing file is not an error.
pub fn remove_prepared_files(dir: &Path) -> io::Result<usize> {
    let mut n = 0;
    for suffix in [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
        match std::fs::remove_file(prepared_path(dir, suffix)) {
            Ok(()) => n += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Takes (file, target) pairs; renames each file to its target, for
/// deletion (`*.deleted`, see [`Segment::deleted_names`]). A file already
/// gone is skipped; a rename that fails is logged and its file left
/// (recovery does not delete a live segment). Gives the targets renamed.
pub fn rename_for_deletion(pairs: &[(PathBuf, PathBuf)]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (path, target) in pairs {
        match std::fs::rename(path, target) {
            Ok(()) => out.push(target.clone()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => ::log::warn!("cannot rename {} for deletion: {e}", path.display()),
        }
    }
    out
}

/// How a read of batch headers treats bytes that are not in the page cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadMode {
    /// Plain pread(2): waits for the disk if it must.
    Blocking,
    /// preadv2(2) with `RWF_NOWAIT`: never waits; bytes not in the page
    /// cache give [`StorageError::NotCached`].
    NoWait,
}

/// Largest relative offset a segment may hold: Kafka rolls when
/// `offset - base offset` would exceed `Int.MaxValue` (`canConvertToRelativeOffset`).
pub const MAX_RELATIVE_OFFSET: i64 = i32::MAX as i64;

/// Largest `.log` size in bytes: positions are u32 in the index and Kafka's
/// `segment.bytes` is an int, so segments are capped at `i32::MAX` bytes.
pub const MAX_SEGMENT_BYTES: u64 = i32::MAX as u64;

/// Takes a base offset and a suffix ("log", "index", "timeindex"); gives
/// Kafka's file name: the offset zero-padded to 20 digits, e.g.
/// `00000000000000000042.log`.
pub fn segment_file_name(base_offset: i64, suffix: &str) -> String {
    format!("{base_offset:020}.{suffix}")
}

/// Takes a file name; gives (base offset, suffix) when it is
/// `<20 digits>.<suffix>`.
pub fn parse_segment_file_name(name: &str) -> Option<(i64, &str)> {
    let (stem, suffix) = name.split_once('.')?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let base = stem.parse::<i64>().ok()?;
    Some((base, suffix))
}

/// What one [`pwritev_nowait`] call did.
#[derive(Debug)]
pub enum NowaitWrite {
    /// Bytes written from the start of the slices: all of them, fewer (the
    /// rest would have blocked), or 0 (`EAGAIN`: all of it would have).
    Written(usize),
    /// The file system does not take `RWF_NOWAIT` for buffered writes
    /// (`EOPNOTSUPP`: ext4 and tmpfs on Linux 6.x; XFS and btrfs take it).
    Unsupported,
    /// Any other error (ENOSPC, EIO, EFBIG …).
    Failed(io::Error),
}

/// One buffered pwritev2(2) of `slices` (the first `IOV_MAX`) at `offset`
/// with `RWF_NOWAIT`: the kernel copies the bytes into the page cache only
/// as far as it can without blocking (no page lock wait, no block
/// allocation that needs I/O, no dirty-page throttling) and answers
/// `EAGAIN` or a short count where it would block. Never blocks.
pub fn pwritev_nowait(file: &File, slices: &[&[u8]], offset: u64) -> NowaitWrite {
    const IOV_MAX: usize = 1024;
    let iovs: Vec<libc::iovec> = slices
        .iter()
        .filter(|s| !s.is_empty())
        .take(IOV_MAX)
        .map(|s| libc::iovec {
            iov_base: s.as_ptr() as *mut libc::c_void,
            iov_len: s.len(),
        })
        .collect();
    if iovs.is_empty() {
        return NowaitWrite::Written(0);
    }
    let Ok(off) = libc::off_t::try_from(offset) else {
        return NowaitWrite::Failed(io::Error::new(
            io::ErrorKind::InvalidInput,
            "file offset overflow",
        ));
    };
    // SAFETY: every iovec points into a live borrowed slice (`slices`) for
    // its full length; the kernel only reads from them; at most IOV_MAX
    // entries, so the count fits in c_int.
    let n = unsafe {
        libc::pwritev2(
            file.as_raw_fd(),
            iovs.as_ptr(),
            iovs.len() as libc::c_int,
            off,
            libc::RWF_NOWAIT,
        )
    };
    if n >= 0 {
        return NowaitWrite::Written(n as usize);
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EINTR) => NowaitWrite::Written(0),
        Some(libc::EOPNOTSUPP) => NowaitWrite::Unsupported,
        _ => NowaitWrite::Failed(err),
    }
}

/// Writes all `slices` contiguously at `offset` with pwritev(2), looping on
/// short writes and EINTR, at most `IOV_MAX` (1024) iovecs per system call.
pub fn pwritev_all(file: &File, slices: &[&[u8]], mut offset: u64) -> io::Result<()> {
    const IOV_MAX: usize = 1024;
    let fd = file.as_raw_fd();
    let mut idx = 0usize; // first slice not fully written
    let mut skip = 0usize; // bytes of slices[idx] already written
    let mut iovs: Vec<libc::iovec> = Vec::with_capacity(slices.len().min(IOV_MAX));
    while idx < slices.len() {
        if slices[idx].len() <= skip {
            idx += 1;
            skip = 0;
            continue;
        }
        iovs.clear();
        for (i, s) in slices[idx..].iter().take(IOV_MAX).enumerate() {
            let part = if i == 0 { &s[skip..] } else { &s[..] };
            if part.is_empty() {
                continue;
            }
            iovs.push(libc::iovec {
                iov_base: part.as_ptr() as *mut libc::c_void,
                iov_len: part.len(),
            });
        }
        let off = libc::off_t::try_from(offset)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file offset overflow"))?;
        // SAFETY: every iovec points into a live borrowed slice (`slices`)
        // for its full length; the kernel only reads from them. `iovs.len()`
        // is at most IOV_MAX so it fits in c_int.
        let n = unsafe { libc::pwritev(fd, iovs.as_ptr(), iovs.len() as libc::c_int, off) };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "pwritev wrote 0 bytes",
            ));
        }
        let mut left = n as usize;
        offset += left as u64;
        while left > 0 && idx < slices.len() {
            let avail = slices[idx].len() - skip;
            if left >= avail {
                left -= avail;
                idx += 1;
                skip = 0;
            } else {
                skip += left;
                left = 0;
            }
        }
    }
    Ok(())
}

/// One segment of a partition log, with its open files and in-memory state.
#[derive(Debug)]
pub struct Segment {
    base_offset: i64,
    log_path: PathBuf,
    log: Arc<File>,
    /// Bytes of valid data in the `.log`.
    size: u64,
    /// Offset after the last batch (the LEO if this is the active segment).
    next_offset: i64,
    pub(crate) offset_index: OffsetIndex,
    pub(crate) time_index: TimeIndex,
    pub(crate) bytes_since_last_index_entry: u64,
    /// Largest batch max timestamp (ms) seen, -1 if none.
    pub(crate) max_timestamp: i64,
    /// Last offset of the batch carrying `max_timestamp`, -1 if none.
    pub(crate) offset_of_max_timestamp: i64,
    /// Time (ms) the `segment.ms` roll clock starts from.
    pub(crate) roll_base_ms: Option<i64>,
    /// How much earlier (ms) than `segment.ms` this segment rolls on age
    /// (`segment.jitter.ms`, drawn when the segment is created or loaded).
    pub(crate) roll_jitter_ms: i64,
    /// Disk was reserved past the data with [`Segment::preallocate`].
    preallocated: bool,
    log_dirty: bool,
}

impl Segment {
    /// Takes the partition dir, a base offset and `segment.index.bytes`;
    /// creates a fresh empty segment (existing files of that name are emptied).
    pub fn create(dir: &Path, base_offset: i64, index_max_bytes: u32) -> io::Result<Segment> {
        let log_path = dir.join(segment_file_name(base_offset, LOG_SUFFIX));
        let log = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&log_path)?;
        let mut seg = Self::with_log(dir, base_offset, log_path, log, index_max_bytes)?;
        seg.offset_index.reset()?;
        seg.time_index.reset()?;
        Ok(seg)
    }

    /// Takes the partition dir, `segment.index.bytes` and the bytes of disk
    /// to reserve (`preallocate`, None: none); creates an empty segment
    /// ahead of a roll under the prepared names ([`prepared_path`],
    /// emptied if they exist), so that the roll itself opens no file: it
    /// gives the segment its base offset with [`Self::rebase`] and has the
    /// files renamed ([`name_prepared_segment`]). Blocking: run off the
    /// shard. Errors with the failed open or reservation.
    pub fn create_prepared(
        dir: &Path,
        index_max_bytes: u32,
        preallocate: Option<u64>,
    ) -> io::Result<Segment> {
        let log_path = prepared_path(dir, LOG_SUFFIX);
        let log = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&log_path)?;
        let size = log.metadata()?.len();
        let mut offset_index =
            OffsetIndex::open(&prepared_path(dir, INDEX_SUFFIX), 0, index_max_bytes)?;
        let mut time_index =
            TimeIndex::open(&prepared_path(dir, TIME_INDEX_SUFFIX), 0, index_max_bytes)?;
        offset_index.reset()?;
        time_index.reset()?;
        let mut seg = Segment::from_parts(0, log_path, log, size, offset_index, time_index);
        if let Some(bytes) = preallocate {
            seg.preallocate(bytes)?;
        }
        Ok(seg)
    }

    /// Takes the partition dir and the base offset a prepared, empty
    /// segment starts at; gives it that base offset and its files' names,
    /// in memory only (no system call: the caller renames the files with
    /// [`name_prepared_segment`], their descriptors staying valid). Does
    /// nothing to a segment holding data.
    pub fn rebase(&mut self, dir: &Path, base_offset: i64) {
        if self.size != 0 {
            return;
        }
        self.base_offset = base_offset;
        self.next_offset = base_offset;
        self.log_path = dir.join(segment_file_name(base_offset, LOG_SUFFIX));
        self.offset_index.rebase(
            &dir.join(segment_file_name(base_offset, INDEX_SUFFIX)),
            base_offset,
        );
        self.time_index.rebase(
            &dir.join(segment_file_name(base_offset, TIME_INDEX_SUFFIX)),
            base_offset,
        );
    }

    /// Takes the partition dir, a base offset and `segment.index.bytes`;
    /// opens an existing segment's files as they are (recovery fixes them up:
    /// `size` is the file length and `next_offset` the base offset until then).
    pub fn open_existing(
        dir: &Path,
        base_offset: i64,
        index_max_bytes: u32,
    ) -> io::Result<Segment> {
        let log_path = dir.join(segment_file_name(base_offset, LOG_SUFFIX));
        let log = OpenOptions::new()
            .read(true)
            .write(true)
            .create(false)
            .open(&log_path)?;
        Self::with_log(dir, base_offset, log_path, log, index_max_bytes)
    }

    fn with_log(
        dir: &Path,
        base_offset: i64,
        log_path: PathBuf,
        log: File,
        index_max_bytes: u32,
    ) -> io::Result<Segment> {
        let size = log.metadata()?.len();
        let offset_index = OffsetIndex::open(
            &dir.join(segment_file_name(base_offset, INDEX_SUFFIX)),
            base_offset,
            index_max_bytes,
        )?;
        let time_index = TimeIndex::open(
            &dir.join(segment_file_name(base_offset, TIME_INDEX_SUFFIX)),
            base_offset,
            index_max_bytes,
        )?;
        Ok(Segment::from_parts(
            base_offset,
            log_path,
            log,
            size,
            offset_index,
            time_index,
        ))
    }

    fn from_parts(
        base_offset: i64,
        log_path: PathBuf,
        log: File,
        size: u64,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
    ) -> Segment {
        Segment {
            base_offset,
            log_path,
            log: Arc::new(log),
            size,
            next_offset: base_offset,
            offset_index,
            time_index,
            bytes_since_last_index_entry: 0,
            max_timestamp: -1,
            offset_of_max_timestamp: -1,
            roll_base_ms: None,
            roll_jitter_ms: 0,
            preallocated: false,
            log_dirty: false,
        }
    }

    /// Takes a byte count (`segment.bytes`); reserves that much disk for the
    /// `.log` (Kafka `preallocate=true`) with fallocate(2) and
    /// FALLOC_FL_KEEP_SIZE, so the file's length, and with it recovery and
    /// every reader, stays as without preallocation. A file system without
    /// fallocate support leaves the file as it is (logged at debug).
    pub fn preallocate(&mut self, bytes: u64) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let len = libc::off_t::try_from(bytes).unwrap_or(libc::off_t::MAX);
        // SAFETY: fallocate on an open file descriptor we own; no memory is
        // passed to the kernel.
        let r = unsafe { libc::fallocate(self.log.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, 0, len) };
        if r != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
                ::log::debug!("{}: no fallocate support: {e}", self.log_path.display());
                return Ok(());
            }
            return Err(e);
        }
        self.preallocated = true;
        Ok(())
    }

    /// Releases disk reserved by [`Segment::preallocate`] past the data
    /// (truncating the file to its own length frees the blocks beyond it).
    /// Called when the segment stops being the active one and at close.
    pub fn release_preallocation(&mut self) -> io::Result<()> {
        self.release_preallocation_at(self.size)
    }

    /// Like [`Self::release_preallocation`], keeping `len` bytes (the end of
    /// the last reserved append, which may still be in flight).
    pub fn release_preallocation_at(&mut self, len: u64) -> io::Result<()> {
        if self.preallocated {
            self.log.set_len(len.max(self.size))?;
            self.preallocated = false;
        }
        Ok(())
    }

    /// Like [`Self::release_preallocation_at`], without the system call:
    /// gives the `.log` and the length to cut it to (`set_len`), for the
    /// caller to run off the shard after the writes queued before it;
    /// None when nothing was reserved.
    pub fn release_preallocation_deferred(&mut self, len: u64) -> Option<(Arc<File>, u64)> {
        if !self.preallocated {
            return None;
        }
        self.preallocated = false;
        Some((Arc::clone(&self.log), len.max(self.size)))
    }

    /// Gives the base offset (first offset this segment may hold).
    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// Gives the `.log` size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Gives the offset after the last batch.
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    /// Gives a shared handle to the `.log` file (for sendfile or fdatasync).
    pub fn log_file(&self) -> Arc<File> {
        Arc::clone(&self.log)
    }

    /// Gives the `.log` path.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    pub(crate) fn set_size(&mut self, size: u64) {
        self.size = size;
    }

    pub(crate) fn set_next_offset(&mut self, next: i64) {
        self.next_offset = next;
    }

    /// Takes `segment.index.bytes`; updates both indexes' entry limits.
    pub fn set_index_max_bytes(&mut self, max_bytes: u32) {
        self.offset_index.set_max_bytes(max_bytes);
        self.time_index.set_max_bytes(max_bytes);
    }

    /// Gives whether either index is full (Kafka rolls then).
    pub fn indexes_full(&self) -> bool {
        self.offset_index.is_full() || self.time_index.is_full()
    }

    /// Takes a byte position; gives the 61-byte batch header stored there
    /// (blocking pread(2): for recovery, the cleaner and other work off the
    /// request path). A header not wholly inside the valid size is a
    /// [`StorageError::Inconsistent`] (KAFKA_STORAGE_ERROR).
    pub fn read_header(&self, position: u64) -> Result<BatchHeader, StorageError> {
        self.read_header_in(position, ReadMode::Blocking)
    }

    /// As [`Self::read_header`], with `mode`: under [`ReadMode::NoWait`] the
    /// header is read with preadv2(2) `RWF_NOWAIT`, and bytes not in the page
    /// cache give [`StorageError::NotCached`] naming the range to warm (from
    /// `position`, up to [`cache::WARM_CHUNK`] bytes, not past the segment's
    /// size) instead of waiting for the disk.
    pub fn read_header_in(
        &self,
        position: u64,
        mode: ReadMode,
    ) -> Result<BatchHeader, StorageError> {
        if position + RECORD_BATCH_HEADER_BYTES as u64 > self.size {
            return Err(StorageError::Inconsistent {
                path: Some(self.log_path.clone()),
                what: Inconsistency::NoWholeHeader {
                    position,
                    size: self.size,
                },
            });
        }
        let mut buf = [0u8; RECORD_BATCH_HEADER_BYTES];
        match mode {
            ReadMode::Blocking => self.log.read_exact_at(&mut buf, position)?,
            ReadMode::NoWait => {
                if !cache::pread_nowait(&self.log, &mut buf, position)? {
                    return Err(StorageError::NotCached {
                        file: Arc::clone(&self.log),
                        path: self.log_path.clone(),
                        position,
                        len: (self.size - position).min(cache::WARM_CHUNK),
                    });
                }
            }
        }
        let h = BatchHeader::parse(&buf).map_err(|e| StorageError::Inconsistent {
            path: Some(self.log_path.clone()),
            what: Inconsistency::BadHeader(e),
        })?;
        let total = h.total_size() as u64;
        if total < RECORD_BATCH_HEADER_BYTES as u64 || position + total > self.size {
            return Err(StorageError::Inconsistent {
                path: Some(self.log_path.clone()),
                what: Inconsistency::BadBatchLength {
                    batch_length: h.batch_length,
                    position,
                },
            });
        }
        Ok(h)
    }

    /// Takes an absolute offset; gives (position, header) of the first batch
    /// whose last offset >= target, found via the offset index (in memory)
    /// then a forward header scan (blocking reads); None when no batch of
    /// this segment reaches it.
    pub fn find_batch(&self, target: i64) -> Result<Option<(u64, BatchHeader)>, StorageError> {
        self.find_batch_in(target, ReadMode::Blocking)
    }

    /// As [`Self::find_batch`], reading headers with `mode` (see
    /// [`Self::read_header_in`]).
    pub fn find_batch_in(
        &self,
        target: i64,
        mode: ReadMode,
    ) -> Result<Option<(u64, BatchHeader)>, StorageError> {
        let pos = u64::from(self.offset_index.lookup(target));
        self.scan_from(pos.min(self.size), mode, |h| h.last_offset() >= target)
    }

    /// Calls `f` with the header of every batch, in file order (blocking
    /// reads). Errors as [`Self::read_header`].
    pub fn for_each_header(&self, mut f: impl FnMut(&BatchHeader)) -> Result<(), StorageError> {
        self.scan_from(0, ReadMode::Blocking, |h| {
            f(h);
            false
        })?;
        Ok(())
    }

    /// Scans batch headers forward from `pos` (a batch start); gives the first
    /// (position, header) for which `stop` is true.
    fn scan_from(
        &self,
        mut pos: u64,
        mode: ReadMode,
        mut stop: impl FnMut(&BatchHeader) -> bool,
    ) -> Result<Option<(u64, BatchHeader)>, StorageError> {
        while pos < self.size {
            let h = self.read_header_in(pos, mode)?;
            if stop(&h) {
                return Ok(Some((pos, h)));
            }
            pos += h.total_size() as u64;
        }
        Ok(None)
    }

    /// Takes the position and header of the first batch to return, a byte
    /// budget and KIP-74's `min_one_batch`; gives the length in bytes of the
    /// whole batches from `start` that fit in `max_bytes` (the first one even
    /// if larger when `min_one_batch`), never past this segment's end; 0 when
    /// the first batch does not fit and `min_one_batch` is false.
    /// Headers are read with `mode` (see [`Self::read_header_in`]).
    pub fn region_len(
        &self,
        start: u64,
        first: &BatchHeader,
        max_bytes: u64,
        min_one_batch: bool,
        mode: ReadMode,
    ) -> Result<u64, StorageError> {
        let first_size = first.total_size() as u64;
        if first_size > max_bytes {
            return Ok(if min_one_batch { first_size } else { 0 });
        }
        let limit = start.saturating_add(max_bytes).min(self.size);
        let mut end = start + first_size;
        // Jump close to the limit with the index (entries are batch starts),
        // then walk the last few headers.
        if let Some(p) = self.offset_index.floor_position(limit) {
            end = end.max(u64::from(p));
        }
        while end < limit {
            let h = self.read_header_in(end, mode)?;
            let next = end + h.total_size() as u64;
            if next > limit {
                break;
            }
            end = next;
        }
        Ok(end - start)
    }

    /// Takes a timestamp (ms); gives (offset, timestamp) for the first batch
    /// whose max timestamp >= ts: its base offset and max timestamp. Starts
    /// from the time index entry below ts, mapped to a position with the
    /// offset index.
    pub fn find_timestamp(&self, ts: i64) -> Result<Option<(i64, i64)>, StorageError> {
        if self.max_timestamp < ts {
            return Ok(None);
        }
        let start = match self.time_index.lookup_before(ts) {
            Some(off) => u64::from(self.offset_index.lookup(off)),
            None => 0,
        };
        Ok(self
            .scan_from(start.min(self.size), ReadMode::Blocking, |h| {
                h.max_timestamp >= ts
            })?
            .map(|(_, h)| (h.base_offset.max(self.base_offset), h.max_timestamp)))
    }

    /// Takes the slices making up new batches (already carrying their
    /// assigned offsets) and writes them at the end of the `.log` with
    /// pwritev. On error the file is cut back to its previous size.
    pub fn write_at_end(&mut self, slices: &[&[u8]]) -> io::Result<()> {
        let at = self.size;
        if let Err(e) = pwritev_all(&self.log, slices, at) {
            if let Err(e2) = self.log.set_len(at) {
                ::log::error!(
                    "{}: could not cut back partial write to {at}: {e2}",
                    self.log_path.display()
                );
            }
            return Err(e);
        }
        self.log_dirty = true;
        Ok(())
    }

    /// Takes the start position, total size (bytes), last offset and max
    /// timestamp (ms) of a batch just written, plus `index.interval.bytes`;
    /// advances size/next offset and adds index entries as Kafka's
    /// `LogSegment.append` does: when more than `index_interval_bytes` were
    /// appended since the last entry, add (last offset, batch start) to the
    /// `.index` and (max timestamp so far, its offset) to the `.timeindex`.
    pub fn note_batch(
        &mut self,
        position: u64,
        size: u64,
        last_offset: i64,
        max_timestamp: i64,
        index_interval_bytes: u32,
    ) -> io::Result<()> {
        let mut writes = Vec::new();
        self.note_batch_deferred(
            position,
            size,
            last_offset,
            max_timestamp,
            index_interval_bytes,
            &mut writes,
        );
        writes.iter().try_for_each(IndexWrite::write_now)
    }

    /// Like [`Self::note_batch`], but index entries only go to the in-memory
    /// indexes; their file writes are pushed to `writes` (in file order) for
    /// the caller to hand to the shard's I/O thread.
    pub fn note_batch_deferred(
        &mut self,
        position: u64,
        size: u64,
        last_offset: i64,
        max_timestamp: i64,
        index_interval_bytes: u32,
        writes: &mut Vec<IndexWrite>,
    ) {
        if max_timestamp > self.max_timestamp {
            self.max_timestamp = max_timestamp;
            self.offset_of_max_timestamp = last_offset;
        }
        if self.bytes_since_last_index_entry > u64::from(index_interval_bytes) {
            if let Ok(pos32) = u32::try_from(position) {
                writes.extend(self.offset_index.append_deferred(last_offset, pos32));
                writes.extend(self.time_index.maybe_append_deferred(
                    self.max_timestamp,
                    self.offset_of_max_timestamp,
                    false,
                ));
            }
            self.bytes_since_last_index_entry = 0;
        }
        self.bytes_since_last_index_entry += size;
        self.size = position + size;
        self.next_offset = last_offset + 1;
        self.log_dirty = true;
    }

    /// Called when the segment stops being the active one (roll) or at close:
    /// appends the final (max timestamp, offset) entry to the `.timeindex`
    /// so it knows the segment's true max timestamp (Kafka `onBecomeInactiveSegment`).
    pub fn finish_time_index(&mut self) -> io::Result<()> {
        if self.max_timestamp >= 0 || self.offset_of_max_timestamp >= 0 {
            self.time_index
                .maybe_append(self.max_timestamp, self.offset_of_max_timestamp, true)?;
        }
        Ok(())
    }

    /// Like [`Self::finish_time_index`], the entry added in memory only:
    /// gives its file write for the caller to make (None: no entry).
    pub fn finish_time_index_deferred(&mut self) -> Option<IndexWrite> {
        if self.max_timestamp >= 0 || self.offset_of_max_timestamp >= 0 {
            self.time_index.maybe_append_deferred(
                self.max_timestamp,
                self.offset_of_max_timestamp,
                true,
            )
        } else {
            None
        }
    }

    /// fdatasyncs the `.log` if written since the last flush.
    pub fn flush_log(&mut self) -> io::Result<()> {
        if self.log_dirty {
            self.log.sync_data()?;
            self.log_dirty = false;
        }
        Ok(())
    }

    /// fdatasyncs the `.log` and both indexes (those written since their last flush).
    pub fn flush_all(&mut self) -> io::Result<()> {
        self.flush_log()?;
        self.offset_index.flush()?;
        self.time_index.flush()
    }

    /// Takes a byte position; cuts the `.log` there and drops index entries
    /// at or past it (used by recovery).
    pub fn truncate_to(&mut self, position: u64, next_offset: i64) -> io::Result<()> {
        self.log.set_len(position)?;
        self.log_dirty = true;
        self.size = position;
        self.next_offset = next_offset;
        self.offset_index.truncate_to_position(position)?;
        self.time_index.truncate_to_offset(next_offset)?;
        Ok(())
    }

    /// Log truncation (Kafka `LogSegment.truncateTo`): takes a batch start
    /// position and the offset the segment continues at; cuts the `.log`
    /// and both indexes there ([`Self::truncate_to`]), then sets what the
    /// cut batches counted for: the largest timestamp (from the time index's
    /// last entry and a scan of the batches after it, Kafka
    /// `loadLargestTimestamp`), the bytes since the last index entry (0, as
    /// Kafka) and the `segment.ms` clock (the first batch's max timestamp,
    /// as after a restart; none for an emptied segment). Blocking file
    /// operations; errors with the I/O failure or a header that does not
    /// read back (`Inconsistent`).
    pub fn truncate_tail(&mut self, position: u64, next_offset: i64) -> Result<(), StorageError> {
        self.release_preallocation_at(position)?;
        self.truncate_to(position, next_offset)?;
        self.bytes_since_last_index_entry = 0;
        let (mut max_ts, mut max_off) = self.time_index.last_entry().unwrap_or((-1, -1));
        let from = if max_off >= 0 {
            u64::from(self.offset_index.lookup(max_off))
        } else {
            0
        };
        self.scan_from(from.min(self.size), ReadMode::Blocking, |h| {
            if h.max_timestamp > max_ts {
                max_ts = h.max_timestamp;
                max_off = h.last_offset();
            }
            false
        })?;
        self.max_timestamp = max_ts;
        self.offset_of_max_timestamp = max_off;
        self.roll_base_ms = if self.size > 0 {
            Some(self.read_header(0)?.max_timestamp)
        } else {
            None
        };
        Ok(())
    }

    /// Renames the segment's files (`.log`, `.index`, `.timeindex`,
    /// `.txnindex`, those that exist) to `<name>.deleted`, for removal by
    /// the caller (readers holding the `.log` keep reading it; recovery
    /// removes `.deleted` leftovers). Gives the renamed paths; a rename
    /// that fails is logged and its file left.
    pub fn rename_deleted(&self) -> Vec<PathBuf> {
        rename_for_deletion(&self.deleted_names())
    }

    /// Gives (file, `<file>.deleted`) for each of the segment's files
    /// (`.log`, `.index`, `.timeindex`, `.txnindex`, whether they exist or
    /// not): what [`Self::rename_deleted`] renames, for a caller that
    /// renames them later ([`rename_for_deletion`]).
    pub fn deleted_names(&self) -> Vec<(PathBuf, PathBuf)> {
        [
            self.log_path.with_extension(LOG_SUFFIX),
            self.log_path.with_extension(INDEX_SUFFIX),
            self.log_path.with_extension(TIME_INDEX_SUFFIX),
            self.log_path
                .with_extension(super::txn_index::TXN_INDEX_SUFFIX),
        ]
        .into_iter()
        .map(|path| {
            let target = PathBuf::from(format!("{}.deleted", path.display()));
            (path, target)
        })
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_roundtrip() {
        assert_eq!(segment_file_name(42, "log"), "00000000000000000042.log");
        assert_eq!(
            parse_segment_file_name("00000000000000000042.timeindex"),
            Some((42, "timeindex"))
        );
        assert_eq!(parse_segment_file_name("0042.log"), None);
        assert_eq!(parse_segment_file_name("0000000000000000004x.log"), None);
        assert_eq!(
            parse_segment_file_name("00000000000000000042.log.swap"),
            Some((42, "log.swap"))
        );
    }

    #[test]
    fn pwritev_many_slices_and_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(dir.path().join("f"))
            .unwrap();
        // More than IOV_MAX slices, some empty.
        let data: Vec<Vec<u8>> = (0..3000u32)
            .map(|i| vec![(i % 251) as u8; (i % 7) as usize])
            .collect();
        let slices: Vec<&[u8]> = data.iter().map(|v| v.as_slice()).collect();
        f.write_all_at(b"XY", 0).unwrap();
        pwritev_all(&f, &slices, 2).unwrap();
        let expect: Vec<u8> = b"XY".iter().copied().chain(data.concat()).collect();
        let got = std::fs::read(dir.path().join("f")).unwrap();
        assert_eq!(got, expect);
    }
}
