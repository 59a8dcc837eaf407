//! The shard's I/O thread: file writes (and other file work that may block
//! in the kernel) run here, off the reactor, so a write that the kernel
//! throttles (dirty-page writeback) or that waits for a page lock stalls
//! only this thread, never the shard's other partitions and connections.
//!
//! One thread per shard, started lazily by the shard's first file write and
//! stopped (after finishing every queued job) when the shard's thread exits.
//! Besides the appends it runs a partition log's other file work in the
//! order the log made it (`storage::file_jobs`: leader-epoch checkpoints,
//! `.txnindex` appends, a roll's work, renames of deleted segments) and
//! creates the next segment of a log ahead of its roll. A second thread,
//! the background thread ([`run_in_background`]), takes the long jobs:
//! opening partitions, deleting directories, unlinking deleted segments.
//! It inherits the shard's CPU affinity, so on a pinned shard it runs on the
//! same core: the work it does (the kernel's copy of record bytes into the
//! page cache) is the work the shard did before, only no longer on the
//! reactor. Jobs run in submission order (FIFO); consecutive writes to the
//! same file at contiguous positions are merged into one `pwritev(2)` of up
//! to [`MAX_IOVECS`] slices, so when the shard is busy the appends of several
//! requests reach the file as one large write. Results come back through a
//! reply delivered on the shard's thread (`shard::home`: glommio 0.9 is not
//! safe when another thread wakes a task that may complete). The record
//! bytes are the request's `Bytes`: moved, never copied. See docs/decisions/append-writes-on-an-io-thread.md.
//!
//! A write whose file system takes buffered `RWF_NOWAIT` writes (XFS,
//! btrfs) skips the hand-off when nothing is queued on the thread: the
//! shard writes it inline with one pwritev2(2) that never blocks
//! ([`IoThread::write_inline_first`]), and only what the kernel could not
//! write without blocking goes to the thread. The first `EOPNOTSUPP` (ext4,
//! tmpfs) turns the inline try off for the shard. See
//! docs/decisions/append-writes-on-an-io-thread.md.

use std::cell::Cell;
use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use super::home::{reply_channel, Reply};
use bytes::Bytes;

use crate::storage::segment::{pwritev_all, pwritev_nowait, NowaitWrite};

/// Most slices one merged `pwritev(2)` takes (Linux `IOV_MAX` is 1024).
pub const MAX_IOVECS: usize = 1024;

/// Jobs taken from the queue at once (the merge window).
const DRAIN: usize = 256;

/// Largest write tried inline on the reactor (bytes): the kernel's copy of
/// 1 MiB into the page cache takes about 100 µs; larger writes go to the
/// thread so that one append never holds the reactor longer.
const INLINE_MAX: u64 = 1 << 20;

/// An inline write is tried only while the current task poll has run for
/// less than this: a task that appends many batches in one poll (a produce
/// request for many partitions, a run of pipelined requests completing
/// without waiting) queues the rest on the I/O thread instead of keeping
/// the reactor from its other tasks (the stall threshold defaults to
/// 500 µs).
const INLINE_POLL_BUDGET: std::time::Duration = std::time::Duration::from_micros(100);

/// An inline write that took longer than this is counted as slow, and
/// appends go to the I/O thread for [`INLINE_BACKOFF`]: slow writes come in
/// runs (page reclaim, dirty-page throttling starting), and each one holds
/// the reactor.
const INLINE_SLOW: std::time::Duration = std::time::Duration::from_micros(250);

/// How long appends skip the inline try after a slow one.
const INLINE_BACKOFF: std::time::Duration = std::time::Duration::from_millis(50);

/// Counters of one I/O thread (read with Relaxed loads; written by the thread).
#[derive(Debug, Default)]
pub struct IoStats {
    /// Write jobs completed.
    pub writes: AtomicU64,
    /// `pwritev(2)` calls made for them (fewer than `writes` when merged).
    pub write_calls: AtomicU64,
    /// Bytes written.
    pub bytes: AtomicU64,
    /// Other jobs (fsyncs, warm-up reads, snapshots) run.
    pub calls: AtomicU64,
    /// Writes completed inline by the shard with `RWF_NOWAIT` (never queued).
    pub inline_writes: AtomicU64,
    /// Bytes those inline writes wrote.
    pub inline_bytes: AtomicU64,
    /// Inline tries the kernel cut short (`EAGAIN` or a short count: the
    /// rest would have blocked), whose rest went to the thread.
    pub inline_fallbacks: AtomicU64,
    /// Appends queued without an inline try because the task poll had
    /// already run for `INLINE_POLL_BUDGET`.
    pub inline_deferred: AtomicU64,
    /// Inline writes that kept the reactor in the kernel longer than
    /// `INLINE_SLOW` (the kernel did not block, but copied or allocated
    /// for that long).
    pub inline_slow: AtomicU64,
    /// Jobs sent and not yet run (write jobs and other jobs): the queue
    /// depth. The shard counts up, the thread down once a job is done.
    queued: AtomicU64,
}

impl IoStats {
    /// Jobs queued and not yet done.
    pub fn queue_depth(&self) -> u64 {
        self.queued.load(Ordering::Acquire)
    }
}

struct WriteJob {
    file: Arc<File>,
    at: u64,
    parts: Vec<Bytes>,
    done: Option<Reply<io::Result<()>>>,
    /// For a detached write: what it was, for the error log line.
    what: &'static str,
}

impl WriteJob {
    fn len(&self) -> u64 {
        self.parts.iter().map(|p| p.len() as u64).sum()
    }
}

enum Job {
    Write(WriteJob),
    Call(Box<dyn FnOnce() + Send>),
}

/// Handle to one I/O thread. Dropping it lets the thread finish its queue,
/// then joins it.
pub struct IoThread {
    tx: Option<mpsc::Sender<Job>>,
    handle: Option<JoinHandle<()>>,
    stats: Arc<IoStats>,
    /// False once a file system refused `RWF_NOWAIT` (EOPNOTSUPP).
    nowait: Cell<bool>,
    /// No inline try before this instant: set for [`INLINE_BACKOFF`] after
    /// a slow inline write (the kernel was reclaiming or throttling).
    inline_after: Cell<Option<std::time::Instant>>,
    /// How long appends skip the inline try after a slow one
    /// ([`INLINE_BACKOFF`]; zero in tests that count inline writes).
    backoff: Cell<std::time::Duration>,
}

/// What an inline try left to do.
enum Inline {
    /// Written (or failed) inline.
    Done(io::Result<()>),
    /// The rest to queue: position and slices.
    Queue(u64, Vec<Bytes>),
}

/// `parts` without their first `n` bytes (slices share the buffers).
fn skip_bytes(parts: Vec<Bytes>, mut n: usize) -> Vec<Bytes> {
    let mut rest = Vec::with_capacity(parts.len());
    for mut p in parts {
        if n >= p.len() {
            n -= p.len();
            continue;
        }
        if n > 0 {
            p = p.slice(n..);
            n = 0;
        }
        rest.push(p);
    }
    rest
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the shard's I/O thread is gone")
}

fn copy_err(e: &io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::new(e.kind(), e.to_string()),
    }
}

impl IoThread {
    /// Starts an I/O thread named `name` (inheriting the caller's CPU
    /// affinity). Errors when the OS refuses a thread.
    pub fn start(name: String) -> io::Result<IoThread> {
        let (tx, rx) = mpsc::channel::<Job>();
        let stats = Arc::new(IoStats::default());
        let st = stats.clone();
        let handle = std::thread::Builder::new().name(name).spawn(move || {
            batch_policy();
            run(rx, &st)
        })?;
        Ok(IoThread {
            tx: Some(tx),
            handle: Some(handle),
            stats,
            nowait: Cell::new(true),
            inline_after: Cell::new(None),
            backoff: Cell::new(INLINE_BACKOFF),
        })
    }

    /// This thread's counters.
    pub fn stats(&self) -> &IoStats {
        &self.stats
    }

    /// Takes a file, a byte position and the slices to write there
    /// contiguously; queues the write and gives a future resolving once
    /// `pwritev(2)` wrote them all (short writes resumed) or failed.
    pub fn write(
        &self,
        file: Arc<File>,
        at: u64,
        parts: Vec<Bytes>,
    ) -> impl std::future::Future<Output = io::Result<()>> {
        let (done, rx) = reply_channel();
        let sent = self.send(Job::Write(WriteJob {
            file,
            at,
            parts,
            done: Some(done),
            what: "",
        }));
        async move {
            sent?;
            rx.await.unwrap_or_else(|_| Err(gone()))
        }
    }

    /// Like [`Self::write`], but when nothing is queued on the thread (so
    /// no earlier job of the shard is still to run) and the write is at most
    /// 1 MiB, first writes inline with one pwritev2(2) `RWF_NOWAIT` that
    /// never blocks; what the kernel could not write without blocking is
    /// queued. Same result as [`Self::write`]: `Ok` once every byte is in
    /// the page cache at `at`, or the first error.
    pub fn write_inline_first(
        &self,
        file: Arc<File>,
        at: u64,
        parts: Vec<Bytes>,
    ) -> impl std::future::Future<Output = io::Result<()>> {
        let queued = match self.try_inline(&file, at, parts) {
            Inline::Done(r) => Err(r),
            Inline::Queue(at, parts) => Ok(self.write(file, at, parts)),
        };
        async move {
            match queued {
                Err(done) => done,
                Ok(q) => q.await,
            }
        }
    }

    fn try_inline(&self, file: &File, at: u64, parts: Vec<Bytes>) -> Inline {
        let len: u64 = parts.iter().map(|p| p.len() as u64).sum();
        if !self.nowait.get() || len == 0 || len > INLINE_MAX || self.stats.queue_depth() != 0 {
            return Inline::Queue(at, parts);
        }
        if let Some(after) = self.inline_after.get() {
            if std::time::Instant::now() < after {
                return Inline::Queue(at, parts);
            }
            self.inline_after.set(None);
        }
        if crate::stall::poll_elapsed().is_some_and(|d| d > INLINE_POLL_BUDGET) {
            self.stats.inline_deferred.fetch_add(1, Ordering::Relaxed);
            return Inline::Queue(at, parts);
        }
        let slices: Vec<&[u8]> = parts.iter().map(|p| p.as_ref()).collect();
        let began = std::time::Instant::now();
        let r = pwritev_nowait(file, &slices, at);
        let took = began.elapsed();
        if took > INLINE_SLOW {
            self.stats.inline_slow.fetch_add(1, Ordering::Relaxed);
            self.inline_after
                .set(Some(began + took + self.backoff.get()));
        }
        drop(slices);
        match r {
            NowaitWrite::Written(n) if n as u64 == len => {
                self.stats.inline_writes.fetch_add(1, Ordering::Relaxed);
                self.stats.inline_bytes.fetch_add(len, Ordering::Relaxed);
                Inline::Done(Ok(()))
            }
            NowaitWrite::Written(n) => {
                self.stats.inline_fallbacks.fetch_add(1, Ordering::Relaxed);
                self.stats
                    .inline_bytes
                    .fetch_add(n as u64, Ordering::Relaxed);
                Inline::Queue(at + n as u64, skip_bytes(parts, n))
            }
            NowaitWrite::Unsupported => {
                log::info!(
                    "the log's file system does not take buffered RWF_NOWAIT writes: \
                     appends go to the shard's I/O thread"
                );
                self.nowait.set(false);
                Inline::Queue(at, parts)
            }
            NowaitWrite::Failed(e) => Inline::Done(Err(e)),
        }
    }

    /// Like [`Self::write`] with nobody waiting: a failure is logged with
    /// `what` (index entries, whose loss only costs a rebuild at start-up).
    /// Tried inline first as [`Self::write_inline_first`] does.
    pub fn write_detached(&self, file: Arc<File>, at: u64, parts: Vec<Bytes>, what: &'static str) {
        let (at, parts) = match self.try_inline(&file, at, parts) {
            Inline::Done(Ok(())) => return,
            Inline::Done(Err(e)) => {
                log::error!("{what}: write at {at} failed: {e}");
                return;
            }
            Inline::Queue(at, parts) => (at, parts),
        };
        if let Err(e) = self.send(Job::Write(WriteJob {
            file,
            at,
            parts,
            done: None,
            what,
        })) {
            log::error!("{what}: write not queued: {e}");
        }
    }

    /// Runs `f` on the I/O thread after every job queued before it; gives
    /// its result (an error only when the thread is gone).
    pub fn run<R: Send + 'static>(
        &self,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> impl std::future::Future<Output = io::Result<R>> {
        let (tx, rx) = reply_channel();
        let sent = self.send(Job::Call(Box::new(move || {
            tx.send(f());
        })));
        async move {
            sent?;
            rx.await.map_err(|_| gone())
        }
    }

    fn send(&self, job: Job) -> io::Result<()> {
        match &self.tx {
            Some(tx) => {
                self.stats.queued.fetch_add(1, Ordering::AcqRel);
                tx.send(job).map_err(|_| {
                    self.stats.queued.fetch_sub(1, Ordering::AcqRel);
                    gone()
                })
            }
            None => Err(gone()),
        }
    }
}

impl Drop for IoThread {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(h) = self.handle.take() {
            if h.join().is_err() {
                log::error!("the I/O thread panicked");
            }
        }
    }
}

/// Puts the calling thread under SCHED_BATCH: a woken I/O thread does not
/// preempt the shard's reactor on their shared core; it runs when the
/// reactor waits (or its time slice ends), by which time the reactor has
/// usually queued more writes, which then merge. Its CPU share stays the
/// same as a normal thread's. Failure only logs.
fn batch_policy() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler on the calling thread (pid 0) with a valid param.
    let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
    if r != 0 {
        log::debug!(
            "SCHED_BATCH for the I/O thread: {}",
            io::Error::last_os_error()
        );
    }
}

fn run(rx: mpsc::Receiver<Job>, stats: &IoStats) {
    let mut batch: Vec<Job> = Vec::with_capacity(DRAIN);
    while let Ok(job) = rx.recv() {
        batch.push(job);
        while batch.len() < DRAIN {
            match rx.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        let mut jobs = batch.drain(..).peekable();
        while let Some(job) = jobs.next() {
            match job {
                Job::Call(f) => {
                    f();
                    stats.calls.fetch_add(1, Ordering::Relaxed);
                    stats.queued.fetch_sub(1, Ordering::Release);
                }
                Job::Write(first) => {
                    // Merge the following writes that continue this one.
                    let mut group = vec![first];
                    let mut iovs = group[0].parts.len();
                    let mut end = group[0].at + group[0].len();
                    while let Some(Job::Write(next)) = jobs.peek() {
                        if !Arc::ptr_eq(&next.file, &group[0].file)
                            || next.at != end
                            || iovs + next.parts.len() > MAX_IOVECS
                        {
                            break;
                        }
                        iovs += next.parts.len();
                        end += next.len();
                        if let Some(Job::Write(next)) = jobs.next() {
                            group.push(next);
                        }
                    }
                    write_group(group, stats);
                }
            }
        }
    }
}

fn write_group(group: Vec<WriteJob>, stats: &IoStats) {
    let at = group[0].at;
    let slices: Vec<&[u8]> = group
        .iter()
        .flat_map(|j| j.parts.iter().map(|p| p.as_ref()))
        .collect();
    let res = pwritev_all(&group[0].file, &slices, at);
    stats.write_calls.fetch_add(1, Ordering::Relaxed);
    if res.is_ok() {
        let n: usize = slices.iter().map(|s| s.len()).sum();
        stats.bytes.fetch_add(n as u64, Ordering::Relaxed);
    }
    drop(slices);
    // Counted down before the completions are sent: a shard woken by one
    // may already write inline (the bytes are in the page cache).
    stats
        .queued
        .fetch_sub(group.len() as u64, Ordering::Release);
    for mut job in group {
        stats.writes.fetch_add(1, Ordering::Relaxed);
        let r = match &res {
            Ok(()) => Ok(()),
            Err(e) => Err(copy_err(e)),
        };
        match job.done.take() {
            Some(done) => done.send(r),
            None => {
                if let Err(e) = r {
                    log::error!("{}: write at {} failed: {e}", job.what, job.at);
                }
            }
        }
    }
}

thread_local! {
    static CURRENT: Result<IoThread, String> = {
        let name = std::thread::current()
            .name()
            .map(|n| format!("{n}-io"))
            .unwrap_or_else(|| "fjord-io".into());
        IoThread::start(name).map_err(|e| e.to_string())
    };
}

/// Runs `f` with this thread's (shard's) I/O thread, starting it on first
/// use. Errors when the thread could not be started.
pub fn with_io<R>(f: impl FnOnce(&IoThread) -> R) -> io::Result<R> {
    CURRENT.with(|c| match c {
        Ok(io) => Ok(f(io)),
        Err(e) => Err(io::Error::other(format!("no I/O thread: {e}"))),
    })
}

/// Writes inline or queues on this shard's I/O thread (see
/// [`IoThread::write_inline_first`]).
pub fn write(
    file: Arc<File>,
    at: u64,
    parts: Vec<Bytes>,
) -> impl std::future::Future<Output = io::Result<()>> {
    let fut = with_io(|io| io.write_inline_first(file, at, parts));
    async move { fut?.await }
}

/// Runs `f` on this shard's I/O thread (see [`IoThread::run`]).
pub fn run_on_io<R: Send + 'static>(
    f: impl FnOnce() -> R + Send + 'static,
) -> impl std::future::Future<Output = io::Result<R>> {
    let fut = with_io(|io| io.run(f));
    async move { fut?.await }
}

/// Resolves once this shard's I/O thread has run every job queued before
/// the call. Errors when the thread is gone.
pub fn io_barrier() -> impl std::future::Future<Output = io::Result<()>> {
    run_on_io(|| ())
}

/// A point in this shard's I/O thread's queue that a blocking job on
/// another thread can wait for ([`IoMark::wait`]).
pub struct IoMark(mpsc::Receiver<()>);

impl IoMark {
    /// Queues the mark on this shard's I/O thread now. Errors when the
    /// thread could not be started.
    pub fn queue() -> io::Result<IoMark> {
        let (tx, rx) = mpsc::channel();
        // The job is queued by `run` itself; its result is not awaited.
        let _queued = with_io(|io| {
            io.run(move || {
                let _ = tx.send(());
            })
        })?;
        Ok(IoMark(rx))
    }

    /// Blocks until the I/O thread reached the mark, i.e. ran every job
    /// queued before it (or is gone). For a background job only: never call
    /// it on the reactor.
    pub fn wait(self) {
        let _ = self.0.recv();
    }
}

thread_local! {
    static BACKGROUND: Result<IoThread, String> = {
        let name = std::thread::current()
            .name()
            .map(|n| format!("{n}-bg"))
            .unwrap_or_else(|| "fjord-bg".into());
        IoThread::start(name).map_err(|e| e.to_string())
    };
}

/// Runs `f` on this shard's background thread (started on first use, on
/// the shard's core, `SCHED_BATCH`, jobs in submission order): for long
/// file work that must hold up neither the reactor nor the appends on the
/// I/O thread — opening (recovering) a partition's log, deleting a
/// partition directory, unlinking deleted segments. Gives `f`'s result;
/// errors when the thread is gone or could not start.
pub fn run_in_background<R: Send + 'static>(
    f: impl FnOnce() -> R + Send + 'static,
) -> impl std::future::Future<Output = io::Result<R>> {
    let fut = BACKGROUND.with(|b| match b {
        Ok(t) => Ok(t.run(f)),
        Err(e) => Err(io::Error::other(format!("no background thread: {e}"))),
    });
    async move { fut?.await }
}

/// Runs `f` on a new thread named `name` (inheriting the caller's CPU
/// affinity) and gives its result: for long blocking work (a compaction
/// pass) that must hold up neither appends nor fsyncs. Errors when the
/// thread cannot be started or panicked.
pub fn on_new_thread<R: Send + 'static>(
    name: String,
    f: impl FnOnce() -> R + Send + 'static,
) -> impl std::future::Future<Output = io::Result<R>> {
    let (tx, rx) = reply_channel();
    let started = std::thread::Builder::new().name(name).spawn(move || {
        batch_policy();
        tx.send(f());
    });
    async move {
        started?;
        rx.await
            .map_err(|_| io::Error::other("the worker thread ended without a result"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    #[test]
    fn writes_land_in_order_and_merge() {
        let dir = tempfile::tempdir().unwrap();
        let f = Arc::new(
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .read(true)
                .write(true)
                .open(dir.path().join("f"))
                .unwrap(),
        );
        let io = IoThread::start("test-io".into()).unwrap();
        // Hold the thread busy so the writes queue up and merge.
        let gate = std::sync::Arc::new(std::sync::Barrier::new(2));
        let g = gate.clone();
        let _busy = io.run(move || {
            g.wait();
        });
        let mut futs = Vec::new();
        for i in 0..100u64 {
            let parts = vec![
                Bytes::from(vec![i as u8; 10]),
                Bytes::from(vec![i as u8; 6]),
            ];
            futs.push(io.write(f.clone(), i * 16, parts));
        }
        gate.wait();
        for fu in futs {
            futures_lite::future::block_on(fu).unwrap();
        }
        let mut buf = vec![0u8; 1600];
        f.read_exact_at(&mut buf, 0).unwrap();
        for i in 0..100usize {
            assert!(buf[i * 16..(i + 1) * 16].iter().all(|b| *b == i as u8));
        }
        let calls = io.stats().write_calls.load(Ordering::Relaxed);
        assert_eq!(io.stats().writes.load(Ordering::Relaxed), 100);
        assert!(
            calls < 100,
            "queued contiguous writes merge ({calls} calls)"
        );
    }

    #[test]
    fn skip_bytes_drops_whole_slices_then_cuts_one() {
        let parts = vec![
            Bytes::from_static(b"abc"),
            Bytes::from_static(b"defg"),
            Bytes::from_static(b"h"),
        ];
        let rest = skip_bytes(parts.clone(), 5);
        assert_eq!(
            rest,
            vec![Bytes::from_static(b"fg"), Bytes::from_static(b"h")]
        );
        assert_eq!(skip_bytes(parts.clone(), 0), parts);
        assert_eq!(skip_bytes(parts.clone(), 3).len(), 2);
        assert!(skip_bytes(parts, 8).is_empty());
    }

    fn open_rw(path: &std::path::Path) -> Arc<File> {
        Arc::new(
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .read(true)
                .write(true)
                .open(path)
                .unwrap(),
        )
    }

    /// 300 appends of 16 KiB through `write_inline_first` (every tenth
    /// while the thread is held busy, so those queue), then the file's
    /// bytes; gives the thread's stats.
    fn appends_land(dir: &std::path::Path) -> Arc<IoStats> {
        let f = open_rw(&dir.join("f"));
        let io = IoThread::start("test-io".into()).unwrap();
        // A slow write on a loaded machine must not turn the tries off.
        io.backoff.set(std::time::Duration::ZERO);
        let size = 16 << 10;
        let mut futs = Vec::new();
        for i in 0..300u64 {
            let busy = (i % 10 == 0).then(|| {
                let gate = Arc::new(std::sync::Barrier::new(2));
                let g = gate.clone();
                (gate, io.run(move || g.wait()))
            });
            let parts = vec![
                Bytes::from(vec![i as u8; 16]),
                Bytes::from(vec![i as u8; size - 16]),
            ];
            futs.push(io.write_inline_first(f.clone(), i * size as u64, parts));
            if let Some((gate, barrier)) = busy {
                gate.wait();
                futures_lite::future::block_on(barrier).unwrap();
                // The next appends find the thread idle again (it counts a
                // job down just after the job answered).
                while io.stats.queue_depth() != 0 {
                    std::thread::yield_now();
                }
            }
        }
        for fu in futs {
            futures_lite::future::block_on(fu).unwrap();
        }
        let mut buf = vec![0u8; 300 * size];
        f.read_exact_at(&mut buf, 0).unwrap();
        for (i, chunk) in buf.chunks(size).enumerate() {
            assert!(chunk.iter().all(|b| *b == i as u8), "append {i}");
        }
        // Every queued job is counted down once the thread ran it (a call
        // job just after it answered, so the last one may still be counted).
        futures_lite::future::block_on(io.run(|| ())).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while io.stats.queue_depth() != 0 && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert_eq!(io.stats.queue_depth(), 0);
        io.stats.clone()
    }

    #[test]
    fn inline_first_falls_back_where_nowait_is_refused() {
        // The test directory's file system may or may not take RWF_NOWAIT;
        // either way every byte lands where it was asked, in order.
        let dir = tempfile::tempdir().unwrap();
        let st = appends_land(dir.path());
        let inline = st.inline_writes.load(Ordering::Relaxed);
        let queued = st.writes.load(Ordering::Relaxed);
        assert!(
            queued >= 30,
            "the writes made while the thread was busy queue ({queued})"
        );
        assert_eq!(
            inline + queued,
            300 + st.inline_fallbacks.load(Ordering::Relaxed),
            "each append written inline, queued, or both (cut short)"
        );
    }

    /// An XFS file system in a loop-mounted image (root only), unmounted
    /// and removed on drop.
    struct XfsMount {
        dir: tempfile::TempDir,
    }

    impl XfsMount {
        fn new() -> Option<XfsMount> {
            // SAFETY: geteuid has no preconditions.
            if unsafe { libc::geteuid() } != 0 {
                eprintln!("not root: no XFS loop mount; the inline path is not exercised");
                return None;
            }
            let dir = tempfile::tempdir().unwrap();
            let img = dir.path().join("xfs.img");
            let mnt = dir.path().join("mnt");
            std::fs::create_dir(&mnt).unwrap();
            File::create(&img).unwrap().set_len(512 << 20).unwrap();
            let mkfs = std::process::Command::new("mkfs.xfs")
                .args(["-q", "-f"])
                .arg(&img)
                .status()
                .expect("mkfs.xfs (xfsprogs, installed by scripts/install-test-deps)");
            assert!(mkfs.success(), "mkfs.xfs failed");
            let mount = std::process::Command::new("mount")
                .args(["-o", "loop"])
                .arg(&img)
                .arg(&mnt)
                .status()
                .unwrap();
            assert!(mount.success(), "mount -o loop of an XFS image failed");
            Some(XfsMount { dir })
        }

        fn path(&self) -> std::path::PathBuf {
            self.dir.path().join("mnt")
        }
    }

    impl Drop for XfsMount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount")
                .arg(self.path())
                .status();
        }
    }

    #[test]
    fn appends_on_xfs_are_written_inline_when_nothing_is_queued() {
        let Some(xfs) = XfsMount::new() else { return };
        let st = appends_land(&xfs.path());
        let inline = st.inline_writes.load(Ordering::Relaxed);
        assert!(
            inline >= 100,
            "most of the 270 appends made while the thread is idle go inline on XFS ({inline})"
        );
        assert!(
            st.inline_bytes.load(Ordering::Relaxed) >= inline * (16 << 10),
            "inline bytes counted"
        );
    }

    #[test]
    fn a_failed_write_reports_its_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ro"), b"x").unwrap();
        let f = Arc::new(File::open(dir.path().join("ro")).unwrap());
        let io = IoThread::start("test-io".into()).unwrap();
        let r = futures_lite::future::block_on(io.write(f, 0, vec![Bytes::from_static(b"abc")]));
        assert!(r.is_err());
    }
}
