//! Page-cache probes and warming for the read path, so a shard never waits on
//! a disk read:
//!
//! - [`pread_nowait`]: preadv2(2) with `RWF_NOWAIT`, which answers EAGAIN
//!   instead of blocking when the bytes are not in the page cache.
//! - [`cached_state`]: cachestat(2) (Linux ≥ 6.5) for a file range, with a
//!   `RWF_NOWAIT` probe of the range's first page where cachestat is missing.
//! - [`warm_blocking`]: reads a range into a scratch buffer so the kernel
//!   brings its pages in; run it on glommio's blocking pool
//!   (`glommio::executor().spawn_blocking`), never on a shard.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Largest scratch buffer [`warm_blocking`] reads into at once (bytes).
pub const WARM_CHUNK: u64 = 1 << 20;

/// The kernel's `struct cachestat_range` (include/uapi/linux/mman.h).
#[repr(C)]
struct CachestatRange {
    off: u64,
    len: u64,
}

/// The kernel's `struct cachestat` (include/uapi/linux/mman.h).
#[repr(C)]
#[derive(Default)]
struct Cachestat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// cachestat(2) is 451 on every architecture that has it (the generic
/// syscall table, x86_64 and aarch64 included).
const SYS_CACHESTAT: libc::c_long = 451;

/// Gives the page size in bytes (4096 when sysconf cannot tell).
fn page_size() -> u64 {
    // SAFETY: sysconf has no memory arguments.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// Takes a file, a buffer and a byte position; fills the whole buffer from
/// `position` with preadv2(2) and `RWF_NOWAIT`. Gives `Ok(true)` when every
/// byte came from the page cache, `Ok(false)` when the kernel would have to
/// wait for the disk (EAGAIN, possibly after a short read). A file system
/// that refuses `RWF_NOWAIT` (EOPNOTSUPP) is read with a plain pread(2).
/// End of file before the buffer is full is `UnexpectedEof`.
pub fn pread_nowait(file: &File, buf: &mut [u8], position: u64) -> io::Result<bool> {
    let fd = file.as_raw_fd();
    let mut done = 0usize;
    while done < buf.len() {
        let rest = &mut buf[done..];
        let iov = libc::iovec {
            iov_base: rest.as_mut_ptr() as *mut libc::c_void,
            iov_len: rest.len(),
        };
        let off = libc::off_t::try_from(position + done as u64)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file offset overflow"))?;
        // SAFETY: one iovec pointing into `rest`, writable for its length,
        // alive for the call; `fd` is open (borrowed from `file`).
        let n = unsafe { libc::preadv2(fd, &iov, 1, off, libc::RWF_NOWAIT) };
        if n > 0 {
            done += n as usize;
            continue;
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "end of file inside a read",
            ));
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EAGAIN) => return Ok(false),
            Some(libc::EINTR) => continue,
            Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) | Some(libc::ENOSYS) => {
                std::os::unix::fs::FileExt::read_exact_at(
                    file,
                    &mut buf[done..],
                    position + done as u64,
                )?;
                return Ok(true);
            }
            _ => return Err(err),
        }
    }
    Ok(true)
}

/// What [`cached_state`] found out about a file range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheState {
    /// Every page of the range is in the page cache (cachestat(2)).
    Cached,
    /// Some page of the range is not in the page cache (cachestat(2)), or
    /// the first page is not (the `RWF_NOWAIT` probe used without cachestat).
    NotCached,
    /// Without cachestat, the first page answered a `RWF_NOWAIT` probe; the
    /// rest of the range was not checked.
    FirstPageCached,
}

/// Takes a file and a byte range (`position`, `len` bytes); gives whether the
/// range is in the page cache. Uses cachestat(2) (one system call, no I/O);
/// where the kernel has none (ENOSYS, before 6.5) or refuses the file,
/// probes the range's first page with preadv2(2) `RWF_NOWAIT` instead, which
/// can only say [`CacheState::NotCached`] or [`CacheState::FirstPageCached`].
/// An empty range is `Cached`.
pub fn cached_state(file: &File, position: u64, len: u64) -> io::Result<CacheState> {
    if len == 0 {
        return Ok(CacheState::Cached);
    }
    let page = page_size();
    let range = CachestatRange { off: position, len };
    let mut cs = Cachestat::default();
    // SAFETY: cachestat(fd, *const cachestat_range, *mut cachestat, flags):
    // both pointers are to live locals with the kernel's layout (#[repr(C)],
    // five/two u64 fields); flags 0.
    let r = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd() as libc::c_long,
            &range as *const CachestatRange,
            &mut cs as *mut Cachestat,
            0 as libc::c_long,
        )
    };
    if r == 0 {
        let first = position / page;
        let last = (position + len).div_ceil(page);
        let pages = last - first;
        return Ok(if cs.nr_cache >= pages {
            CacheState::Cached
        } else {
            CacheState::NotCached
        });
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP) | Some(libc::EPERM) => {
            let take = (page - position % page).min(len) as usize;
            let mut buf = vec![0u8; take];
            Ok(if pread_nowait(file, &mut buf, position)? {
                CacheState::FirstPageCached
            } else {
                CacheState::NotCached
            })
        }
        _ => Err(err),
    }
}

/// Takes a file and a byte range (`position`, `len` bytes); reads the range
/// with pread(2) into a scratch buffer of at most [`WARM_CHUNK`] bytes so its
/// pages end up in the page cache. Blocks on the disk: call it on the
/// blocking pool. Stops early at end of file. Gives the bytes read.
pub fn warm_blocking(file: &File, position: u64, len: u64) -> io::Result<u64> {
    let mut buf = vec![0u8; len.min(WARM_CHUNK) as usize];
    let mut done = 0u64;
    while done < len {
        let take = (len - done).min(WARM_CHUNK) as usize;
        match std::os::unix::fs::FileExt::read_at(file, &mut buf[..take], position + done) {
            Ok(0) => break,
            Ok(n) => done += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Takes a shared file and a byte range (`position`, `len` bytes); runs
/// [`warm_blocking`] on glommio's blocking pool, so the calling shard keeps
/// serving while the disk is read. Gives the bytes read. Must be called
/// from inside a glommio executor.
pub async fn warm(file: std::sync::Arc<File>, position: u64, len: u64) -> io::Result<u64> {
    glommio::executor()
        .spawn_blocking(move || warm_blocking(&file, position, len))
        .await
}

/// Takes a file; fdatasyncs it and asks the kernel to drop its pages from
/// the page cache (posix_fadvise `POSIX_FADV_DONTNEED`; dirty pages would
/// stay, hence the sync). The kernel may keep some pages: check with
/// [`cached_state`]. For tests and tools.
pub fn evict(file: &File) -> io::Result<()> {
    file.sync_data()?;
    // SAFETY: posix_fadvise on an open fd, no memory arguments.
    let r = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(len: usize) -> (tempfile::TempDir, File) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut f = File::create(&path).unwrap();
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        f.write_all(&data).unwrap();
        drop(f);
        (dir, File::open(&path).unwrap())
    }

    #[test]
    fn cached_after_write_and_reads_match() {
        let (_d, f) = file_with(3 * 4096 + 17);
        assert_eq!(
            cached_state(&f, 0, 3 * 4096 + 17).unwrap(),
            CacheState::Cached
        );
        let mut buf = [0u8; 100];
        assert!(pread_nowait(&f, &mut buf, 4090).unwrap());
        let expect: Vec<u8> = (4090..4190).map(|i| (i % 251) as u8).collect();
        assert_eq!(&buf[..], &expect[..]);
        let mut past = [0u8; 100];
        assert!(pread_nowait(&f, &mut past, 3 * 4096).is_err());
    }

    #[test]
    fn evicted_range_is_not_cached_until_warmed() {
        let len = 256 * 1024;
        let (_d, f) = file_with(len);
        evict(&f).unwrap();
        if cached_state(&f, 0, len as u64).unwrap() == CacheState::Cached {
            eprintln!("SKIP: the kernel kept the pages after POSIX_FADV_DONTNEED");
            return;
        }
        let mut buf = [0u8; 61];
        if pread_nowait(&f, &mut buf, 8192).unwrap() {
            eprintln!("SKIP: the page came back (readahead by someone else?)");
            return;
        }
        assert_eq!(warm_blocking(&f, 0, len as u64).unwrap(), len as u64);
        assert_eq!(cached_state(&f, 0, len as u64).unwrap(), CacheState::Cached);
        assert!(pread_nowait(&f, &mut buf, 8192).unwrap());
    }
}
