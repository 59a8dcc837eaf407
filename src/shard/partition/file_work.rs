//! The partition's file work off the reactor: the log's queued file jobs
//! (`storage::file_jobs`: leader-epoch checkpoints, `.txnindex` appends, a
//! roll's work, renames of deleted segments) handed to the shard's I/O
//! thread in the order the log made them, ahead of the writes queued after
//! them; the next segment created ahead on the I/O thread so a roll only
//! swaps it in; and the removal of a partition from its shard.
//!
//! A critical job that fails (a checkpoint, a new segment's names) is
//! marked on the I/O thread itself, before the writes queued after it
//! run: [`Partition::written`] refuses the commit of any append whose
//! write completes after that, so no append is acknowledged past it.

use std::sync::atomic::Ordering;

use super::*;

impl Partition {
    /// Switches the log to deferred file work (a partition served by a
    /// shard: see `PartitionLog::defer_file_work`) and has its next
    /// segment prepared when its roll is near.
    pub fn defer_file_work(self: &Rc<Self>) {
        self.log.borrow_mut().defer_file_work();
        self.prepare_ahead(false);
    }

    /// Hands the log's queued file work to the shard's I/O thread (one job
    /// running them in order, queued now: before any write queued after
    /// this call) and watches it: a critical failure stops appends (and,
    /// unless the partition was removed from this broker, the broker, as a
    /// failed write does). Gives a receiver that resolves once the work ran
    /// (None: nothing was queued).
    pub(super) fn submit_file_work(self: &Rc<Self>) -> Option<oneshot::Receiver<()>> {
        let (jobs, created_here) = {
            let mut log = self.log.borrow_mut();
            (log.take_file_jobs(), log.take_segment_created_here())
        };
        if created_here {
            // A roll created its segment here, under its final names: the
            // next flush makes them durable with the records.
            self.dir_sync_due.set(true);
        }
        if jobs.is_empty() {
            return None;
        }
        let renamed_in = jobs
            .iter()
            .find_map(|j| j.names_segment_in())
            .map(|d| d.to_path_buf());
        if renamed_in.is_some() {
            self.renames_pending.set(self.renames_pending.get() + 1);
        }
        let failed = self.file_failed.clone();
        let run = super::super::io::run_on_io(move || {
            let mut failures = Vec::new();
            for job in jobs {
                let (what, critical) = (job.what(), job.is_critical());
                if let Err(e) = job.run() {
                    if critical {
                        // Seen by the shard before the result of any write
                        // queued after this job.
                        failed.store(true, Ordering::Release);
                    }
                    failures.push((what, critical, e.to_string()));
                }
            }
            failures
        });
        let (tx, rx) = oneshot::channel();
        let me = self.clone();
        crate::shard::stall::spawn_local("file work", async move {
            let failures = match run.await {
                Ok(f) => f,
                Err(e) => {
                    me.file_failed.store(true, Ordering::Release);
                    vec![("file work", true, e.to_string())]
                }
            };
            let ok = failures.is_empty();
            me.file_work_done(failures);
            let _ = tx.send(());
            if renamed_in.is_some() {
                me.renames_ran();
            }
            // The roll's new names made durable off the append path too (a
            // flush policy's next flush fsyncs the directory itself).
            if let (true, Some(dir)) = (ok, renamed_in) {
                let synced = super::super::io::run_in_background(move || {
                    crate::storage::segment::sync_dir(&dir).map_err(|e| (dir, e))
                });
                if let Ok(Err((dir, e))) = synced.await {
                    log::warn!(
                        "{}: fsync of the directory after a roll failed: {e}",
                        dir.display()
                    );
                }
            }
        })
        .detach();
        // A roll may have used the prepared segment.
        self.prepare_ahead(false);
        Some(rx)
    }

    /// A batch of file work with a roll's renames ran (or failed, which
    /// stops the log): the next flush fsyncs the directory, and a flush
    /// that came due meanwhile is posted now.
    fn renames_ran(self: &Rc<Self>) {
        self.renames_pending
            .set(self.renames_pending.get().saturating_sub(1));
        self.dir_sync_due.set(true);
        if self.renames_pending.get() == 0 && self.flush_deferred.replace(false) {
            self.start_flush();
        }
    }

    /// Takes the failures of a batch of file work (what, critical, error):
    /// logs each; a critical one stops the log (and the broker, unless the
    /// partition was removed from it).
    fn file_work_done(&self, failures: Vec<(&'static str, bool, String)>) {
        let mut critical = None;
        for (what, is_critical, e) in failures {
            log::error!("{}-{}: {what} failed: {e}", self.topic, self.index);
            if is_critical && critical.is_none() {
                critical = Some(format!("{what} failed: {e}"));
            }
        }
        if let Some(why) = critical {
            self.log.borrow_mut().file_work_failed(why.clone());
            if !self.retired.get() {
                self.log_dir_failed(&why);
            }
        }
    }

    /// Whether critical file work of this partition failed (a write
    /// completing after it is not committed).
    pub(super) fn file_work_failed(&self) -> bool {
        self.file_failed.load(Ordering::Acquire)
    }

    /// Has the next segment created on the I/O thread when the log wants
    /// one (deferred file work, none prepared or being prepared, its roll
    /// near, or at once with `force`; see `PartitionLog::prepare_segment`);
    /// the segment is kept by the log for its next roll.
    pub(super) fn prepare_ahead(self: &Rc<Self>, force: bool) {
        if self.retired.get() {
            return;
        }
        let now = crate::shard::now_ms();
        let Some(prep) = self.log.borrow_mut().prepare_segment(now, force) else {
            return;
        };
        let create = super::super::io::run_on_io(move || prep.create());
        let me = self.clone();
        crate::shard::stall::spawn_local("segment preparation", async move {
            let seg = create.await.and_then(|r| r);
            me.log.borrow_mut().install_prepared(seg);
            me.segment_prepared.notify_all();
        })
        .detach();
    }

    /// Takes an upper estimate of an append's bytes and offsets; resolves
    /// once its reservation will not roll the active segment without a
    /// prepared segment to swap in: at once when no roll is due or one is
    /// prepared, else after the preparation it starts (or one running)
    /// ended. A reservation that rolls anyway (the estimate was low, or the
    /// preparation failed) lets the segment grow until the next append
    /// finds one prepared, or, past the segment's byte or offset limit,
    /// creates it on the shard (logged). The client and follower append
    /// paths call it before they reserve.
    pub async fn ready_for_append(self: &Rc<Self>, bytes: u64, offsets: i64) {
        if self
            .log
            .borrow()
            .needs_prepared_segment(bytes, offsets, crate::shard::now_ms())
        {
            self.segment_ready().await;
        }
    }

    /// Resolves once a segment is prepared for the next roll (started now
    /// if none is being prepared), or at once when none can be (a log that
    /// takes no appends, or without deferred file work): for the callers
    /// that roll without an append (retention, DeleteRecords) and those
    /// that append ([`Self::ready_for_append`]).
    pub(super) async fn segment_ready(self: &Rc<Self>) {
        let g = self.segment_prepared.generation();
        if self.log.borrow().has_prepared_segment() {
            return;
        }
        self.prepare_ahead(true);
        if !self.log.borrow().preparing_segment() {
            return;
        }
        super::super::notify::any_changed(vec![(self.segment_prepared.clone(), g)]).await;
    }

    /// Takes the partition out of this broker (a later image removed it):
    /// it takes no append, truncation or DeleteRecords from now on, and a
    /// failure of file work still queued for it no longer stops the broker
    /// (its directory is being deleted). Call before its directory's
    /// deletion is queued.
    pub fn retire(&self) {
        self.retired.set(true);
    }

    /// Whether the partition was taken out of this broker ([`Self::retire`]).
    pub fn is_retired(&self) -> bool {
        self.retired.get()
    }

    /// `Io` when the partition was retired (see [`Self::retire`]).
    pub(super) fn refuse_if_retired(&self) -> Result<(), StorageError> {
        if self.retired.get() {
            return Err(StorageError::Io(std::io::Error::other(format!(
                "{}-{} was removed from this broker",
                self.topic, self.index
            ))));
        }
        Ok(())
    }
}

/// Unlinks `*.deleted` files after `delay_ms` (Kafka's `file.delete.delay.ms`)
/// so that fetches already reading them finish first, on the shard's
/// background thread, once `renamed` (the queued renames, when any)
/// resolved. The deletion's cause was logged when the segments were
/// removed from the log; a file already gone is skipped.
pub(super) fn remove_later(
    files: Vec<std::path::PathBuf>,
    delay_ms: u64,
    renamed: Option<oneshot::Receiver<()>>,
) {
    if files.is_empty() {
        return;
    }
    crate::shard::stall::spawn_local("segment removal", async move {
        if let Some(r) = renamed {
            let _ = r.await;
        }
        glommio::timer::sleep(Duration::from_millis(delay_ms)).await;
        let unlink = super::super::io::run_in_background(move || {
            for f in files {
                match std::fs::remove_file(&f) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => log::warn!("cannot remove {}: {e}", f.display()),
                }
            }
        });
        if let Err(e) = unlink.await {
            log::warn!("deleted segments not unlinked: {e}");
        }
    })
    .detach();
}

#[cfg(test)]
#[path = "file_work_tests.rs"]
mod tests;
