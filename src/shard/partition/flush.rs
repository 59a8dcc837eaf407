//! The flush policy of a partition (`flush.messages` /
//! `log.flush.interval.messages`, `flush.ms`): posting fdatasyncs to the
//! shard's flush thread (`shard::flusher`), applying their results in
//! posting order, and answering the acks=all produces that wait for them.
//!
//! A flush is posted as soon as one is due, even while earlier ones are
//! queued or running; the thread merges what is queued into its next round
//! (group commit). Results are applied in the order the flushes were
//! posted, whatever order their answers arrive in:
//! * a success moves `flushed_offset` to the LEO taken when it was posted,
//!   unless the log was truncated since (those offsets will hold other
//!   records) or an earlier flush failed;
//! * the first failure is kept for good (`flush_failed`): after a failed
//!   fdatasync the kernel may have dropped dirty pages, so no later success
//!   may cover the records before it; every waiter, present and future,
//!   gets the error (KAFKA_STORAGE_ERROR), and the broker stops unless the
//!   partition was removed meanwhile (its directory is being deleted).

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use futures_channel::oneshot;

use super::Partition;
use crate::shard::error::FlushError;

/// One flush posted to the flush thread and not yet applied.
pub(super) struct PostedFlush {
    /// Every offset below this is covered once it succeeds.
    target: i64,
    /// The partition's truncation count when it was posted.
    truncations: u64,
    /// Its result, once the thread answered.
    result: Rc<Cell<Option<Result<(), FlushError>>>>,
}

impl Partition {
    /// Resolves once every offset below `offset` is on stable storage.
    /// Errors with the [`FlushError`] (KAFKA_STORAGE_ERROR) once a flush of
    /// this partition failed.
    pub async fn wait_flushed(self: &Rc<Self>, offset: i64) -> Result<(), FlushError> {
        if self.flushed_offset.get() >= offset {
            return Ok(());
        }
        if let Some(e) = self.flush_failed.get() {
            return Err(e);
        }
        let (tx, rx) = oneshot::channel();
        self.flush_waiters.borrow_mut().push((offset, tx));
        if offset > self.flush_posted.get() {
            self.start_flush();
        }
        rx.await.unwrap_or(Err(FlushError::Abandoned))
    }

    /// `flush.ms`: a flush at most `ms` after the first unflushed append.
    pub(super) fn arm_flush_timer(self: &Rc<Self>, ms: u64) {
        if self.flush_timer_armed.replace(true) {
            return;
        }
        let me = self.clone();
        crate::shard::stall::spawn_local("flush timer", async move {
            glommio::timer::sleep(Duration::from_millis(ms)).await;
            me.flush_timer_armed.set(false);
            if me.unflushed_messages.get() > 0 {
                me.start_flush();
            }
        })
        .detach();
    }

    /// Posts a flush of everything committed so far to the shard's flush
    /// thread, even while earlier flushes of this partition are queued or
    /// running. Nothing is posted when an earlier flush already covers the
    /// LEO and no file or directory is owed a sync, nor once a flush failed
    /// (no later one may count: every waiter gets that error). While a
    /// roll's renames are queued on the I/O thread and not yet run, the
    /// flush is deferred until they ran (`renames_ran`): its directory
    /// fsync must come after them, or the new segment's name could be lost
    /// at a crash with records in it acknowledged.
    pub(super) fn start_flush(self: &Rc<Self>) {
        if self.flush_failed.get().is_some() {
            return;
        }
        if self.renames_pending.get() > 0 {
            self.flush_deferred.set(true);
            return;
        }
        let (files, target, dir) = {
            let log = self.log.borrow();
            let target = log.log_end_offset();
            if target <= self.flush_posted.get()
                && !self.dir_sync_due.get()
                && self.unflushed_files.borrow().is_empty()
            {
                self.unflushed_messages.set(0);
                return;
            }
            let mut files = std::mem::take(&mut *self.unflushed_files.borrow_mut());
            if files.is_empty() {
                files.push(log.active_log_file());
            }
            // A roll's renames ran on the I/O thread (no flush is posted
            // while they are pending), so they are in the directory by
            // now; they become durable here.
            let dir = self
                .dir_sync_due
                .replace(false)
                .then(|| log.dir().to_path_buf());
            (files, target, dir)
        };
        self.unflushed_messages.set(0);
        self.flush_posted.set(self.flush_posted.get().max(target));
        let result = Rc::new(Cell::new(None));
        self.flushes_posted.borrow_mut().push_back(PostedFlush {
            target,
            truncations: self.truncations.get(),
            result: result.clone(),
        });
        let synced = crate::shard::flusher::sync(files, dir);
        let me = self.clone();
        crate::shard::stall::spawn_local("flush", async move {
            result.set(Some(synced.await.map_err(|e| FlushError::sync(&e))));
            me.apply_flushes();
        })
        .detach();
    }

    /// Applies the answered flushes at the head of the posting order, then
    /// answers the waiters they cover (all of them, with the error, once a
    /// flush failed), and posts a flush for waiters no posted one covers
    /// (the log was cut under them).
    fn apply_flushes(self: &Rc<Self>) {
        loop {
            let next = {
                let mut posted = self.flushes_posted.borrow_mut();
                match posted.front().and_then(|f| f.result.get()) {
                    Some(res) => posted.pop_front().map(|f| (f, res)),
                    None => None,
                }
            };
            let Some((f, res)) = next else { break };
            match res {
                Ok(()) => {
                    if self.flush_failed.get().is_none() && self.truncations.get() == f.truncations
                    {
                        self.flushed_offset
                            .set(self.flushed_offset.get().max(f.target));
                    }
                }
                Err(e) => self.flush_failed_with(e),
            }
        }
        let failed = self.flush_failed.get();
        let flushed = self.flushed_offset.get();
        let done: Vec<_> = {
            let mut w = self.flush_waiters.borrow_mut();
            let (done, keep): (Vec<_>, Vec<_>) = w
                .drain(..)
                .partition(|(off, _)| failed.is_some() || *off <= flushed);
            *w = keep;
            done
        };
        for (off, tx) in done {
            let _ = tx.send(match failed {
                Some(e) if off > flushed => Err(e),
                _ => Ok(()),
            });
        }
        let uncovered = self
            .flush_waiters
            .borrow()
            .iter()
            .any(|(off, _)| *off > self.flush_posted.get());
        if uncovered {
            self.start_flush();
        }
    }

    /// The first failure is kept (nothing more is posted: see
    /// `start_flush`); the broker stops unless the partition was removed
    /// (its directory is being deleted, so a sync of it may find nothing).
    fn flush_failed_with(&self, e: FlushError) {
        if self.flush_failed.get().is_none() {
            self.flush_failed.set(Some(e));
        }
        if self.retired.get() {
            log::warn!(
                "{}-{}: a flush of the removed partition failed: {e}",
                self.topic,
                self.index
            );
        } else {
            self.log_dir_failed(&format!("an fdatasync failed: {e}"));
        }
    }

    /// After the log was cut to `leo`: the flushes posted before the cut
    /// cover offsets that are gone (their results will not move
    /// `flushed_offset`), so nothing counts as posted above what is
    /// flushed, and the waiters still at or below the new LEO get a flush
    /// of their own now.
    pub(super) fn flush_after_truncation(self: &Rc<Self>) {
        let flushed = self.flushed_offset.get();
        if self.flush_posted.get() > flushed {
            self.flush_posted.set(flushed);
        }
        if !self.flush_waiters.borrow().is_empty() {
            self.start_flush();
        }
    }
}
