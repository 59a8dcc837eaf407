//! Writing a response: in-memory chunks through glommio's socket, file regions
//! with sendfile(2) straight from the page cache to the socket.
//!
//! glommio has no sendfile/splice operation, so we call sendfile(2) on the
//! socket's fd (non-blocking). When the socket buffer is full (EAGAIN) there is
//! no way to await writability through glommio's public API, so the next
//! 64 KiB of that region are read with pread(2) and written through glommio's
//! async write (which does wait); then sendfile is tried again. Most bytes go
//! zero-copy; the fallback bytes are counted in [`WriteStats`].

use std::cell::Cell;
use std::os::fd::AsRawFd;

use futures_lite::AsyncWriteExt;
use glommio::net::TcpStream;

use crate::protocol::{Response, ResponseChunk};
use crate::storage::FileRegion;

/// Bytes sent per path on this shard (for the benchmark report).
#[derive(Debug, Default)]
pub struct WriteStats {
    /// Bytes sent with sendfile(2).
    pub zero_copy_bytes: Cell<u64>,
    /// Bytes copied through user space because the socket was full.
    pub fallback_bytes: Cell<u64>,
}

thread_local! {
    /// This shard's write statistics.
    pub static WRITE_STATS: WriteStats = WriteStats::default();
}

const FALLBACK_CHUNK: u64 = 64 * 1024;

/// Writes a whole response frame to `stream`.
pub async fn write_response(stream: &mut TcpStream, response: Response) -> std::io::Result<()> {
    let mut pending: Vec<u8> = Vec::new();
    let single = response.chunks.len() == 1;
    for chunk in response.chunks {
        match chunk {
            ResponseChunk::Bytes(b) if single => stream.write_all(&b).await?,
            ResponseChunk::Bytes(b) => pending.extend_from_slice(&b),
            ResponseChunk::File(region) => {
                if !pending.is_empty() {
                    stream.write_all(&pending).await?;
                    pending.clear();
                }
                send_region(stream, &region).await?;
            }
        }
    }
    if !pending.is_empty() {
        stream.write_all(&pending).await?;
    }
    Ok(())
}

async fn send_region(stream: &mut TcpStream, region: &FileRegion) -> std::io::Result<()> {
    let sock = stream.as_raw_fd();
    let file = region.file.as_raw_fd();
    let mut offset = region.position as libc::off_t;
    let mut left = region.len;
    while left > 0 {
        let want = left.min(1 << 30) as usize;
        // SAFETY: both fds are open for the duration of the call (the socket
        // is borrowed mutably, the file is held by the Arc in `region`), and
        // `offset` is a valid pointer to a local.
        let n = unsafe { libc::sendfile(sock, file, &mut offset, want) };
        if n > 0 {
            left -= n as u64;
            WRITE_STATS.with(|s| s.zero_copy_bytes.set(s.zero_copy_bytes.get() + n as u64));
            continue;
        }
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "segment file shorter than the region being sent",
            ));
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EAGAIN) => {
                let take = left.min(FALLBACK_CHUNK) as usize;
                let mut buf = vec![0u8; take];
                std::os::unix::fs::FileExt::read_exact_at(&*region.file, &mut buf, offset as u64)?;
                stream.write_all(&buf).await?;
                offset += take as libc::off_t;
                left -= take as u64;
                WRITE_STATS.with(|s| s.fallback_bytes.set(s.fallback_bytes.get() + take as u64));
            }
            Some(libc::EINTR) => continue,
            _ => return Err(err),
        }
    }
    Ok(())
}
