//! Writing a response: in-memory chunks through glommio's socket, file regions
//! with sendfile(2) straight from the page cache to the socket (on TLS
//! connections they are read and encrypted instead: `copy_region`).
//!
//! glommio has no sendfile/splice operation, so we call sendfile(2) on the
//! socket's fd. glommio leaves its sockets in blocking mode (its io_uring
//! operations need no O_NONBLOCK, and io_uring would fail them with EAGAIN
//! instead of waiting if the flag were set), so each sendfile(2) call runs
//! with O_NONBLOCK set just for it ([`sendfile_nowait`]): a client that
//! stops reading fills the socket buffer and gets EAGAIN, never a shard
//! blocked in the kernel. When the socket buffer is full (EAGAIN) there is
//! no way to await writability through glommio's public API, so the next
//! 64 KiB of that region are read with pread(2) and written through glommio's
//! async write (which does wait); then sendfile is tried again. Most bytes go
//! zero-copy; the fallback bytes are counted in [`WriteStats`].
//!
//! **Cold regions.** sendfile(2) reads the file synchronously: a region not
//! in the page cache would block the shard on the disk. Before sending a
//! region, cachestat(2) checks it; each 1 MiB chunk not fully cached is read
//! into a scratch buffer on glommio's blocking pool (which brings its pages
//! in), then the region is sent. Without cachestat (kernels before 6.5,
//! ENOSYS) the first page is probed with preadv2(2) `RWF_NOWAIT` and the
//! whole region is warmed when that page is missing; a region whose first
//! page is cached is sent as it is (pages further in may still be cold).
//! Counted per shard in [`WriteStats`]. A page evicted between the warm and
//! sendfile is read by sendfile blocking (rare, bounded to that page range).

use std::cell::Cell;
use std::os::fd::AsRawFd;

use futures_lite::AsyncWriteExt;
use glommio::net::TcpStream;

use crate::protocol::{Response, ResponseChunk};
use crate::storage::cache::{self, CacheState, WARM_CHUNK};
use crate::storage::FileRegion;
use crate::transport::Transport;

// The counters live with the shard (handlers count into them too); kept
// at this path.
pub use crate::shard::write_stats::{WriteStats, WRITE_STATS};

fn add(c: &Cell<u64>, n: u64) {
    c.set(c.get() + n);
}

const FALLBACK_CHUNK: u64 = 64 * 1024;

/// Most bytes one sendfile(2) call sends before the task yields to the
/// reactor (about 0.1 ms of copying at this machine's sendfile ceiling).
const SENDFILE_CHUNK: u64 = 256 * 1024;

/// Writes a whole response frame to `transport`: file regions with
/// sendfile(2) on plain TCP, read and encrypted on TLS (see
/// [`copy_region`]).
pub async fn write_response(transport: &mut Transport, response: Response) -> std::io::Result<()> {
    let mut pending: Vec<u8> = Vec::new();
    let single = response.chunks.len() == 1;
    for chunk in response.chunks {
        match chunk {
            ResponseChunk::Bytes(b) if single => transport.write_all(&b).await?,
            ResponseChunk::Bytes(b) => pending.extend_from_slice(&b),
            ResponseChunk::File(region) => {
                if !pending.is_empty() {
                    transport.write_all(&pending).await?;
                    pending.clear();
                }
                match transport {
                    Transport::Plain(stream) => send_region(stream, &region).await?,
                    Transport::Tls(..) => copy_region(transport, &region).await?,
                }
            }
        }
    }
    if !pending.is_empty() {
        transport.write_all(&pending).await?;
    }
    Ok(())
}

/// A file region on a TLS connection: its pages are warmed off the shard
/// as for sendfile ([`warm_region`]), then read in chunks of at most
/// [`FALLBACK_CHUNK`] bytes (page-cache copies) and written through TLS,
/// with a yield between chunks. Counted in `tls_copied_bytes`.
async fn copy_region(transport: &mut Transport, region: &FileRegion) -> std::io::Result<()> {
    warm_region(region).await;
    let mut at = region.position;
    let end = region.position + region.len;
    let mut buf = Vec::new();
    while at < end {
        let take = (end - at).min(FALLBACK_CHUNK) as usize;
        buf.resize(take, 0);
        std::os::unix::fs::FileExt::read_exact_at(&*region.file, &mut buf, at)?;
        transport.write_all(&buf).await?;
        at += take as u64;
        WRITE_STATS.with(|s| add(&s.tls_copied_bytes, take as u64));
        if at < end {
            glommio::executor().yield_task_queue_now().await;
        }
    }
    Ok(())
}

/// Takes a file region; makes sure its pages are in the page cache before
/// sendfile(2) reads them on the shard: checks with cachestat(2) (or the
/// first-page probe, see the module docs) and, for each chunk of at most
/// [`WARM_CHUNK`] bytes not fully cached, reads it on the blocking pool.
/// Counts into [`WRITE_STATS`]. Gives the bytes warmed. A failed check or
/// warm is logged at debug and leaves the region to sendfile as it is.
pub async fn warm_region(region: &FileRegion) -> u64 {
    WRITE_STATS.with(|s| add(&s.regions_checked, 1));
    match cache::cached_state(&region.file, region.position, region.len) {
        Ok(CacheState::Cached) | Ok(CacheState::FirstPageCached) => return 0,
        Ok(CacheState::NotCached) => {}
        Err(e) => {
            log::debug!("cache check of a region failed: {e}");
            return 0;
        }
    }
    let mut warmed = 0u64;
    let mut at = region.position;
    let end = region.position + region.len;
    while at < end {
        let take = (end - at).min(WARM_CHUNK);
        // A chunk already cached (e.g. a region cold only at its tail) is
        // not read again; without cachestat every chunk is warmed.
        let cold = !matches!(
            cache::cached_state(&region.file, at, take),
            Ok(CacheState::Cached)
        );
        if cold {
            match cache::warm(region.file.clone(), at, take).await {
                Ok(n) => warmed += n,
                Err(e) => {
                    log::debug!("warming a region at {at}: {e}");
                    break;
                }
            }
        }
        at += take;
    }
    WRITE_STATS.with(|s| {
        add(&s.regions_warmed, 1);
        add(&s.bytes_warmed, warmed);
    });
    warmed
}

/// One sendfile(2) of at most `count` bytes from `file` at `*offset` to the
/// socket `sock` that never blocks: O_NONBLOCK is set on the socket for the
/// call and its flags restored after it (the connection's task is the only
/// user of the socket while it writes, so no other operation sees the flag).
/// Gives the bytes sent (0 at the file's end), or sendfile's error, taken
/// before the flags are restored (EAGAIN when the socket buffer is full).
fn sendfile_nowait(
    sock: i32,
    file: i32,
    offset: &mut libc::off_t,
    count: usize,
) -> std::io::Result<usize> {
    // SAFETY: fcntl on an open fd with integer arguments.
    let flags = unsafe { libc::fcntl(sock, libc::F_GETFL) };
    let toggle = flags >= 0 && flags & libc::O_NONBLOCK == 0;
    if toggle {
        // SAFETY: as above.
        unsafe { libc::fcntl(sock, libc::F_SETFL, flags | libc::O_NONBLOCK) };
    }
    // SAFETY: both fds are open for the duration of the call (the caller
    // holds the socket and the file), and `offset` is a valid pointer.
    let n = unsafe { libc::sendfile(sock, file, offset, count) };
    let sent = usize::try_from(n).map_err(|_| std::io::Error::last_os_error());
    if toggle {
        // SAFETY: as above.
        unsafe { libc::fcntl(sock, libc::F_SETFL, flags) };
    }
    sent
}

async fn send_region(stream: &mut TcpStream, region: &FileRegion) -> std::io::Result<()> {
    warm_region(region).await;
    let sock = stream.as_raw_fd();
    let file = region.file.as_raw_fd();
    let mut offset = region.position as libc::off_t;
    let mut left = region.len;
    while left > 0 {
        let want = left.min(SENDFILE_CHUNK) as usize;
        // The socket is borrowed mutably and the file held by the Arc in
        // `region` for the whole call.
        match sendfile_nowait(sock, file, &mut offset, want) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "segment file shorter than the region being sent",
                ));
            }
            Ok(n) => {
                left -= n as u64;
                WRITE_STATS.with(|s| s.zero_copy_bytes.set(s.zero_copy_bytes.get() + n as u64));
                if left > 0 {
                    // Let the reactor poll (other connections, timers)
                    // between chunks: one large region is not sent in one
                    // stretch.
                    glommio::executor().yield_task_queue_now().await;
                }
            }
            Err(err) => match err.raw_os_error() {
                Some(libc::EAGAIN) => {
                    let take = left.min(FALLBACK_CHUNK) as usize;
                    let mut buf = vec![0u8; take];
                    std::os::unix::fs::FileExt::read_exact_at(
                        &*region.file,
                        &mut buf,
                        offset as u64,
                    )?;
                    stream.write_all(&buf).await?;
                    offset += take as libc::off_t;
                    left -= take as u64;
                    WRITE_STATS
                        .with(|s| s.fallback_bytes.set(s.fallback_bytes.get() + take as u64));
                }
                Some(libc::EINTR) => {}
                _ => return Err(err),
            },
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::Arc;

    #[test]
    fn cold_region_is_warmed_once_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg.log");
        let len = 3 * WARM_CHUNK + 12_345;
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&vec![7u8; len as usize]).unwrap();
        drop(f);
        let file = Arc::new(std::fs::File::open(&path).unwrap());
        cache::evict(&file).unwrap();
        let region = FileRegion {
            file: file.clone(),
            position: 100,
            len: len - 200,
        };
        if cache::cached_state(&file, region.position, region.len).unwrap() == CacheState::Cached {
            eprintln!("SKIP: the kernel kept the pages after POSIX_FADV_DONTNEED");
            return;
        }
        glommio::LocalExecutor::default().run(async move {
            let before = WRITE_STATS.with(|s| (s.regions_checked.get(), s.regions_warmed.get()));
            let warmed = warm_region(&region).await;
            assert!(warmed > 0 && warmed <= region.len, "warmed {warmed}");
            let (checked, warms, bytes) = WRITE_STATS.with(|s| {
                (
                    s.regions_checked.get(),
                    s.regions_warmed.get(),
                    s.bytes_warmed.get(),
                )
            });
            assert_eq!((checked, warms), (before.0 + 1, before.1 + 1));
            assert!(bytes >= warmed);
            assert_eq!(
                cache::cached_state(&region.file, region.position, region.len).unwrap(),
                CacheState::Cached
            );
            // Now cached: checked again, not warmed again.
            assert_eq!(warm_region(&region).await, 0);
            let again = WRITE_STATS.with(|s| (s.regions_checked.get(), s.regions_warmed.get()));
            assert_eq!(again, (checked + 1, warms));
        });
    }
}
