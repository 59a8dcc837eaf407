//! The shard's flush thread: the fdatasync(2)s of its partitions' flush
//! policies (`flush.messages`, `flush.ms`; acks=all waits for them), off
//! the reactor.
//!
//! One thread per shard, started by the shard's first flush, inheriting the
//! shard's CPU affinity. A partition posts a [`sync`] job as soon as a flush
//! is due, even while an earlier one is running: the thread takes every job
//! queued when it is free, merges them (each file and each directory once)
//! and answers each job as soon as the syncs of its own files are done. So the
//! next fdatasync starts the moment the previous one returns, with no round
//! trip through the reactor in between, and one round covers the due
//! flushes of every partition of the shard (group commit across partitions
//! and connections). A file whose fdatasync failed fails every later job
//! that names it: after a failed fdatasync the kernel may have dropped the
//! dirty pages and a later call can succeed without them
//! (docs/durability.md).
//!
//! Answers reach the waiting task through the shard's home queue
//! (`shard::home`), as the I/O thread's do.

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use super::home::{reply_channel, Reply};

/// The error of one file's or directory's sync, shared by the jobs that
/// named it.
pub type SyncResult = Result<(), Arc<io::Error>>;

/// One partition's flush: its `.log` files with bytes not yet synced, and
/// its directory when a roll renamed files in it.
struct SyncJob {
    files: Vec<Arc<File>>,
    dir: Option<PathBuf>,
    done: Reply<SyncResult>,
}

/// Counters of one flush thread, kept by the thread and logged when it
/// ends.
#[derive(Debug, Default)]
struct FlushStats {
    /// Rounds run: each takes every job queued when it started.
    rounds: u64,
    /// Jobs answered.
    jobs: u64,
    /// fdatasync(2) calls of `.log` files.
    file_syncs: u64,
}

/// Handle to one flush thread. Dropping it lets the thread finish its
/// queue, then joins it.
pub struct FlushThread {
    tx: Option<mpsc::Sender<SyncJob>>,
    handle: Option<JoinHandle<()>>,
}

impl FlushThread {
    /// Starts a flush thread named `name` (inheriting the caller's CPU
    /// affinity). Errors when the OS refuses a thread.
    pub fn start(name: String) -> io::Result<FlushThread> {
        let (tx, rx) = mpsc::channel::<SyncJob>();
        let handle = std::thread::Builder::new()
            .name(name)
            .spawn(move || run(rx))?;
        Ok(FlushThread {
            tx: Some(tx),
            handle: Some(handle),
        })
    }

    fn post(&self, job: SyncJob) -> io::Result<()> {
        match &self.tx {
            Some(tx) => tx.send(job).map_err(|_| gone()),
            None => Err(gone()),
        }
    }
}

impl Drop for FlushThread {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(h) = self.handle.take() {
            if h.join().is_err() {
                log::error!("the flush thread panicked");
            }
        }
    }
}

fn gone() -> io::Error {
    io::Error::new(
        io::ErrorKind::BrokenPipe,
        "the shard's flush thread is gone",
    )
}

thread_local! {
    static CURRENT: Result<FlushThread, String> = {
        let name = std::thread::current()
            .name()
            .map(|n| format!("{n}-flush"))
            .unwrap_or_else(|| "fjord-flush".into());
        FlushThread::start(name).map_err(|e| e.to_string())
    };
}

/// Takes a partition's `.log` files and, when a roll renamed files in it,
/// its directory; queues their sync on this shard's flush thread (started
/// on first use). Gives a future resolving once fdatasync(2) of every file
/// and fsync(2) of the directory returned: `Ok`, or the first error (an
/// error too when the thread could not be started or is gone). Everything
/// written to the files before the call is covered.
pub fn sync(
    files: Vec<Arc<File>>,
    dir: Option<PathBuf>,
) -> impl std::future::Future<Output = SyncResult> {
    let (done, rx) = reply_channel();
    let posted = CURRENT.with(|c| match c {
        Ok(t) => t.post(SyncJob { files, dir, done }),
        Err(e) => Err(io::Error::other(format!("no flush thread: {e}"))),
    });
    async move {
        posted.map_err(Arc::new)?;
        rx.await.unwrap_or_else(|_| Err(Arc::new(gone())))
    }
}

fn run(rx: mpsc::Receiver<SyncJob>) {
    let mut stats = FlushStats::default();
    // Files whose fdatasync failed, with the error: they fail every later
    // job (the kernel may have dropped their dirty pages).
    let mut failed: Vec<(Arc<File>, Arc<io::Error>)> = Vec::new();
    while let Ok(first) = rx.recv() {
        let mut jobs = vec![first];
        while let Ok(j) = rx.try_recv() {
            jobs.push(j);
        }
        round(jobs, &mut failed, &mut stats);
    }
    let FlushStats {
        rounds,
        jobs,
        file_syncs,
    } = stats;
    if rounds > 0 {
        log::info!(
            "flush thread: {jobs} flushes in {rounds} rounds ({:.2} a round), {file_syncs} fdatasyncs of log files",
            jobs as f64 / rounds as f64
        );
    }
}

/// Syncs each file and directory of `jobs` once, in the jobs' order, and
/// answers each job as soon as its own files and then its directory (so a
/// renamed segment's name is durable only with its bytes) are synced: with
/// the first error among them, or `Ok`.
fn round(
    jobs: Vec<SyncJob>,
    failed: &mut Vec<(Arc<File>, Arc<io::Error>)>,
    stats: &mut FlushStats,
) {
    let mut files: Vec<(Arc<File>, SyncResult)> = Vec::new();
    let mut dirs: Vec<(PathBuf, SyncResult)> = Vec::new();
    stats.rounds += 1;
    for job in jobs {
        let mut first_err = None;
        for f in &job.files {
            let res = match files.iter().find(|(g, _)| Arc::ptr_eq(f, g)) {
                Some((_, r)) => r.clone(),
                None => {
                    let r = sync_file(f, failed, stats);
                    files.push((f.clone(), r.clone()));
                    r
                }
            };
            if first_err.is_none() {
                first_err = res.err();
            }
        }
        if let Some(d) = &job.dir {
            let res = match dirs.iter().find(|(e, _)| e == d) {
                Some((_, r)) => r.clone(),
                None => {
                    let r = crate::storage::segment::sync_dir(d).map_err(Arc::new);
                    dirs.push((d.clone(), r.clone()));
                    r
                }
            };
            if first_err.is_none() {
                first_err = res.err();
            }
        }
        stats.jobs += 1;
        job.done.send(first_err.map_or(Ok(()), Err));
    }
}

/// fdatasync(2) of `f`, unless an earlier one failed (then that error).
fn sync_file(
    f: &Arc<File>,
    failed: &mut Vec<(Arc<File>, Arc<io::Error>)>,
    stats: &mut FlushStats,
) -> SyncResult {
    if let Some((_, e)) = failed.iter().find(|(g, _)| Arc::ptr_eq(f, g)) {
        return Err(e.clone());
    }
    stats.file_syncs += 1;
    f.sync_data().map_err(|e| {
        let e = Arc::new(e);
        failed.push((f.clone(), e.clone()));
        e
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &std::path::Path, name: &str) -> Arc<File> {
        Arc::new(
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .open(dir.join(name))
                .unwrap(),
        )
    }

    #[test]
    fn queued_jobs_share_one_round_and_each_file_is_synced_once() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (file(dir.path(), "a.log"), file(dir.path(), "b.log"));
        let mut stats = FlushStats::default();
        let mut failed = Vec::new();
        let mut rxs = Vec::new();
        let mut jobs = Vec::new();
        for files in [vec![a.clone()], vec![a.clone(), b.clone()], vec![b.clone()]] {
            let (done, rx) = reply_channel();
            jobs.push(SyncJob {
                files,
                dir: Some(dir.path().to_path_buf()),
                done,
            });
            rxs.push(rx);
        }
        round(jobs, &mut failed, &mut stats);
        for rx in rxs {
            assert!(futures_lite::future::block_on(rx).unwrap().is_ok());
        }
        assert_eq!(stats.rounds, 1);
        assert_eq!(stats.jobs, 3);
        assert_eq!(stats.file_syncs, 2);
        assert!(failed.is_empty());
    }

    #[test]
    fn a_failed_file_fails_every_later_job_that_names_it_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let ok = file(dir.path(), "ok.log");
        let bad = file(dir.path(), "bad.log");
        let mut stats = FlushStats::default();
        // As if an earlier fdatasync of `bad` had failed with EIO.
        let mut failed = vec![(bad.clone(), Arc::new(io::Error::from_raw_os_error(5)))];
        let (d1, r1) = reply_channel();
        let (d2, r2) = reply_channel();
        let jobs = vec![
            SyncJob {
                files: vec![ok.clone(), bad.clone()],
                dir: None,
                done: d1,
            },
            SyncJob {
                files: vec![ok.clone()],
                dir: None,
                done: d2,
            },
        ];
        round(jobs, &mut failed, &mut stats);
        let e = futures_lite::future::block_on(r1).unwrap().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(5));
        assert!(futures_lite::future::block_on(r2).unwrap().is_ok());
        // The failed file was not synced again: one fdatasync (of `ok`).
        assert_eq!(stats.file_syncs, 1);
    }

    #[test]
    fn a_missing_directory_fails_only_the_jobs_that_name_it() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path(), "x.log");
        let mut stats = FlushStats::default();
        let mut failed = Vec::new();
        let (d1, r1) = reply_channel();
        let (d2, r2) = reply_channel();
        let jobs = vec![
            SyncJob {
                files: vec![f.clone()],
                dir: Some(dir.path().join("gone")),
                done: d1,
            },
            SyncJob {
                files: vec![f],
                dir: None,
                done: d2,
            },
        ];
        round(jobs, &mut failed, &mut stats);
        assert!(futures_lite::future::block_on(r1).unwrap().is_err());
        assert!(futures_lite::future::block_on(r2).unwrap().is_ok());
    }
}
