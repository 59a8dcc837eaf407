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
//! oneshot channel (glommio wakes a task from a foreign thread through its
//! reactor's notifier). The record bytes are the request's `Bytes`: moved,
//! never copied. See docs/decisions/append-writes-on-an-io-thread.md.

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use bytes::Bytes;
use futures_channel::oneshot;

use crate::storage::segment::pwritev_all;

/// Most slices one merged `pwritev(2)` takes (Linux `IOV_MAX` is 1024).
pub const MAX_IOVECS: usize = 1024;

/// Jobs taken from the queue at once (the merge window).
const DRAIN: usize = 256;

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
    /// Jobs queued (write jobs and other jobs); minus `writes` and
    /// `calls`, the jobs still waiting or running (the queue depth).
    pub queued: AtomicU64,
}

impl IoStats {
    /// Jobs queued and not yet done.
    pub fn queue_depth(&self) -> u64 {
        let done = self.writes.load(Ordering::Relaxed) + self.calls.load(Ordering::Relaxed);
        self.queued.load(Ordering::Relaxed).saturating_sub(done)
    }
}

struct WriteJob {
    file: Arc<File>,
    at: u64,
    parts: Vec<Bytes>,
    done: Option<oneshot::Sender<io::Result<()>>>,
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
        let (done, rx) = oneshot::channel();
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

    /// Like [`Self::write`] with nobody waiting: a failure is logged with
    /// `what` (index entries, whose loss only costs a rebuild at start-up).
    pub fn write_detached(&self, file: Arc<File>, at: u64, parts: Vec<Bytes>, what: &'static str) {
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
        let (tx, rx) = oneshot::channel();
        let sent = self.send(Job::Call(Box::new(move || {
            let _ = tx.send(f());
        })));
        async move {
            sent?;
            rx.await.map_err(|_| gone())
        }
    }

    fn send(&self, job: Job) -> io::Result<()> {
        match &self.tx {
            Some(tx) => {
                self.stats.queued.fetch_add(1, Ordering::Relaxed);
                tx.send(job).map_err(|_| gone())
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
    for mut job in group {
        stats.writes.fetch_add(1, Ordering::Relaxed);
        let r = match &res {
            Ok(()) => Ok(()),
            Err(e) => Err(copy_err(e)),
        };
        match job.done.take() {
            Some(done) => {
                let _ = done.send(r);
            }
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

/// Queues a write on this shard's I/O thread (see [`IoThread::write`]).
pub fn write(
    file: Arc<File>,
    at: u64,
    parts: Vec<Bytes>,
) -> impl std::future::Future<Output = io::Result<()>> {
    let fut = with_io(|io| io.write(file, at, parts));
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
    let (tx, rx) = oneshot::channel();
    let started = std::thread::Builder::new().name(name).spawn(move || {
        batch_policy();
        let _ = tx.send(f());
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
    fn a_failed_write_reports_its_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ro"), b"x").unwrap();
        let f = Arc::new(File::open(dir.path().join("ro")).unwrap());
        let io = IoThread::start("test-io".into()).unwrap();
        let r = futures_lite::future::block_on(io.write(f, 0, vec![Bytes::from_static(b"abc")]));
        assert!(r.is_err());
    }
}
