//! Tests of a partition whose log's file work runs on the shard's I/O
//! thread (as a served partition's does): rolls into prepared segments,
//! `.txnindex` entries written before the marker and rebuilt when short,
//! retention renames then unlinks, a failed checkpoint stopping the appends
//! queued after it, a retired partition taking no more work, and flushes
//! posted to the shard's flush thread while others run.

use super::super::tests::{batch, marker, open};
use super::*;
use crate::shard::io::io_barrier;
use crate::storage::segment::{prepared_path, segment_file_name};
use crate::storage::txn_index::read_txn_index;
use crate::storage::validate_batches;

/// Appends `b` as a client's append does on a shard: waits for a prepared
/// segment when it would roll, reserves, writes on the I/O thread, commits.
async fn append(p: &Rc<Partition>, b: &bytes::Bytes) -> Result<AppendResult, StorageError> {
    let v = validate_batches(b, usize::MAX).unwrap();
    let offsets = i64::from(v[0].header.last_offset_delta) + 1;
    p.ready_for_append(b.len() as u64, offsets).await;
    let a = p.append(b, &v, crate::shard::now_ms())?;
    a.finish().await.map(|(r, _)| r)
}

#[test]
fn a_served_partition_rolls_into_prepared_segments() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let segment_bytes = 600;
        let p = open(&path, segment_bytes);
        p.defer_file_work();
        for i in 0..30 {
            let r = append(&p, &batch(-1, -1, -1, 3, false)).await.unwrap();
            assert_eq!(r.base_offset, 3 * i);
        }
        io_barrier().await.unwrap();
        let bases = p.log.borrow().segment_base_offsets();
        assert!(bases.len() > 4, "{bases:?}");
        for base in &bases {
            for ext in ["log", "index", "timeindex"] {
                assert!(
                    path.join(segment_file_name(*base, ext)).exists(),
                    "{base}.{ext}"
                );
            }
            // Every roll found its segment prepared: none grew past the limit.
            let len = std::fs::metadata(path.join(segment_file_name(*base, "log")))
                .unwrap()
                .len();
            assert!(len <= segment_bytes, "segment {base}: {len} bytes");
        }
        drop(p);
        // What a kill leaves: the log without the prepared segment.
        let p = open(&path, segment_bytes);
        assert_eq!(p.log_end_offset(), 90);
        assert_eq!(p.log.borrow().segment_base_offsets(), bases);
        assert!(!prepared_path(&path, "log").exists());
    });
}

#[test]
fn txn_index_entries_land_before_their_marker_and_a_short_file_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = open(&path, 1 << 30);
        p.defer_file_work();
        assert_eq!(
            append(&p, &batch(1, 0, 0, 2, true))
                .await
                .unwrap()
                .base_offset,
            0
        );
        assert_eq!(marker(&p, 1, 0, false, 0).await, Ok(2));
        assert_eq!(
            append(&p, &batch(2, 0, 0, 1, true))
                .await
                .unwrap()
                .base_offset,
            3
        );
        assert_eq!(marker(&p, 2, 0, false, 0).await, Ok(4));
        // The marker is committed: its entry, queued before its write, is in.
        let idx = path.join(segment_file_name(0, "txnindex"));
        let entries = read_txn_index(&idx).unwrap().unwrap();
        assert_eq!(entries.len(), 2);
        let aborted = p.txns.borrow().aborted().to_vec();
        drop(p);
        // A crash that lost the last entry (written, not flushed): the
        // reopened partition rebuilds it from the log.
        let bytes = std::fs::read(&idx).unwrap();
        std::fs::write(&idx, &bytes[..34]).unwrap();
        let p = open(&path, 1 << 30);
        assert_eq!(std::fs::read(&idx).unwrap(), bytes);
        assert_eq!(p.txns.borrow().aborted(), aborted.as_slice());
    });
}

#[test]
fn retention_renames_on_the_io_thread_then_unlinks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = open(&path, 200);
        p.defer_file_work();
        for _ in 0..6 {
            append(&p, &batch(-1, -1, -1, 3, false)).await.unwrap();
        }
        let mut s = p.settings();
        s.retention_bytes = Some(1);
        s.file_delete_delay_ms = 0;
        p.set_settings(s);
        let n = p.apply_retention(crate::shard::now_ms()).await.unwrap();
        assert!(n > 0);
        let start = p.log_start_offset();
        assert!(start > 0);
        let first = path.join(segment_file_name(0, "log"));
        poll(|| !first.exists() && !path.join(format!("{}.deleted", first.display())).exists())
            .await;
        // Every deleted file unlinked (the background thread unlinks them
        // one by one) before the directory is listed again.
        poll(|| {
            std::fs::read_dir(&path).unwrap().all(|e| {
                !e.unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".deleted")
            })
        })
        .await;
        // The log start survives a reopen.
        drop(p);
        let p = open(&path, 200);
        assert_eq!(p.log_start_offset(), start);
    });
}

#[test]
fn a_failed_checkpoint_stops_the_appends_queued_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = open(&path, 1 << 30);
        p.defer_file_work();
        assert_eq!(
            append(&p, &batch(-1, -1, -1, 3, false))
                .await
                .unwrap()
                .base_offset,
            0
        );
        // The next checkpoint cannot be written (its temporary file's name
        // is taken by a directory).
        std::fs::create_dir(path.join("leader-epoch-checkpoint.tmp")).unwrap();
        p.set_leadership(true, 5);
        let e = append(&p, &batch(-1, -1, -1, 3, false)).await.unwrap_err();
        assert!(matches!(e, StorageError::Io(_)), "{e}");
        assert_eq!(p.log_end_offset(), 3, "not committed");
        assert!(append(&p, &batch(-1, -1, -1, 1, false)).await.is_err());
        assert!(crate::shard::fatal::reason().is_some(), "the broker stops");
    });
}

#[test]
fn a_retired_partition_takes_no_more_work() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = open(&path, 1 << 30);
        p.defer_file_work();
        append(&p, &batch(-1, -1, -1, 2, false)).await.unwrap();
        p.retire();
        assert!(p.is_retired());
        assert!(append(&p, &batch(-1, -1, -1, 1, false)).await.is_err());
        assert!(p.truncate_to(0).await.is_err());
        assert!(p.delete_records(1).await.is_err());
        assert_eq!(p.log_end_offset(), 2);
    });
}

/// Polls `done` every millisecond (up to 5 s) on the executor.
async fn poll(mut done: impl FnMut() -> bool) {
    for _ in 0..5_000 {
        if done() {
            return;
        }
        glommio::timer::sleep(std::time::Duration::from_millis(1)).await;
    }
    panic!("condition not reached within 5 s");
}

#[test]
fn an_idle_expired_partition_rolls_into_a_prepared_segment_and_ages_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = open(&path, 1 << 30);
        p.defer_file_work();
        append(&p, &batch(-1, -1, -1, 3, false)).await.unwrap();
        assert!(!p.log.borrow().has_prepared_segment(), "far from its roll");
        let mut s = p.settings();
        s.retention_ms = Some(1_000);
        p.set_settings(s);
        // Long after its records: the active segment is rolled (into a
        // segment prepared for it) and deleted.
        let later = crate::shard::now_ms() + 3_600_000;
        assert_eq!(p.apply_retention(later).await.unwrap(), 1);
        assert_eq!(p.log_start_offset(), 3);
        assert_eq!(p.log.borrow().segment_base_offsets(), vec![3]);
        io_barrier().await.unwrap();
        assert!(path.join(segment_file_name(3, "log")).exists());
    });
}

#[test]
fn a_roll_leaves_the_directory_fsync_to_the_next_flush_and_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = open(&path, 600);
        p.defer_file_work();
        // Appends up to the first roll: once its renames ran, the
        // directory's fsync is owed by the next flush.
        let mut last = 0;
        while p.log.borrow().segment_base_offsets().len() < 2 {
            last = append(&p, &batch(-1, -1, -1, 3, false))
                .await
                .unwrap()
                .last_offset;
        }
        poll(|| p.dir_sync_due.get()).await;
        flush_every_message(&p);
        let r = append(&p, &batch(-1, -1, -1, 3, false)).await.unwrap();
        assert!(r.last_offset > last);
        p.start_flush();
        p.wait_flushed(r.last_offset + 1).await.unwrap();
        assert!(
            !p.dir_sync_due.get(),
            "the flush took the directory's fsync"
        );
        for ext in ["log", "index", "timeindex"] {
            let base = p.log.borrow().segment_base_offsets()[1];
            assert!(
                path.join(segment_file_name(base, ext)).exists(),
                "{base}.{ext}"
            );
        }
    });
}

/// Flushes of two partitions posted while earlier ones are queued or
/// running: every waiter is answered once its offset is synced, and each
/// partition's flushed offset reaches its LEO.
#[test]
fn flushes_posted_while_others_run_answer_every_waiter() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (p1, p2) = (d1.path().to_path_buf(), d2.path().to_path_buf());
    glommio::LocalExecutor::default().run(async move {
        let parts = [open(&p1, 1 << 20), open(&p2, 1 << 20)];
        for p in &parts {
            p.defer_file_work();
            flush_every_message(p);
        }
        let mut waits = Vec::new();
        for _ in 0..20 {
            for p in &parts {
                let b = batch(-1, -1, -1, 3, false);
                let v = validate_batches(&b, usize::MAX).unwrap();
                p.ready_for_append(b.len() as u64, 3).await;
                let a = p.append(&b, &v, crate::shard::now_ms()).unwrap();
                let (r, due) = a.finish().await.unwrap();
                assert!(due, "flush.messages=1 makes every append's flush due");
                let p = p.clone();
                waits.push(glommio::spawn_local(async move {
                    p.wait_flushed(r.last_offset + 1).await
                }));
            }
        }
        for w in waits {
            w.await.unwrap();
        }
        for p in &parts {
            let leo = p.log.borrow().log_end_offset();
            assert_eq!(leo, 60);
            assert_eq!(p.flushed_offset.get(), leo);
            assert_eq!(p.flush_posted.get(), leo);
        }
    });
}

/// A flush that completes after the log was truncated below its target
/// leaves the flushed offset at the truncation point: the offsets above it
/// will hold other records, not yet synced.
#[test]
fn a_flush_completing_after_a_truncation_does_not_cover_the_new_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = open(&path, 1 << 20);
        p.defer_file_work();
        for _ in 0..4 {
            append(&p, &batch(-1, -1, -1, 3, false)).await.unwrap();
        }
        flush_every_message(&p);
        // Posted with target 12, then the log is cut to 6 before the
        // flush's answer is handled on this thread.
        p.start_flush();
        assert_eq!(p.flush_posted.get(), 12);
        p.truncate_to(6).await.unwrap();
        assert!(p.flush_posted.get() <= 6);
        assert!(p.flushed_offset.get() <= 6);
        let r = append(&p, &batch(-1, -1, -1, 3, false)).await.unwrap();
        assert_eq!(r.last_offset, 8);
        p.wait_flushed(9).await.unwrap();
        assert_eq!(p.flushed_offset.get(), 9);
    });
}

/// A file whose fdatasync(2) fails (EINVAL on /dev/null), standing in for a
/// segment file whose fdatasync hit EIO.
fn failing_file() -> Arc<std::fs::File> {
    Arc::new(
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .unwrap(),
    )
}

/// A file with `mb` MiB of dirty pages: its fdatasync keeps the flush
/// thread busy for a while.
fn dirty_file(dir: &std::path::Path, mb: usize) -> Arc<std::fs::File> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(dir.join("dirty.bin"))
        .unwrap();
    let chunk = vec![7u8; 1 << 20];
    for _ in 0..mb {
        f.write_all(&chunk).unwrap();
    }
    Arc::new(f)
}

async fn append_due(p: &Rc<Partition>) -> AppendResult {
    let b = batch(-1, -1, -1, 3, false);
    let v = validate_batches(&b, usize::MAX).unwrap();
    p.ready_for_append(b.len() as u64, 3).await;
    let a = p.append(&b, &v, crate::shard::now_ms()).unwrap();
    let (r, due) = a.finish().await.unwrap();
    assert!(due);
    r
}

async fn wait_or_time_out(
    p: &Rc<Partition>,
    offset: i64,
    secs: u64,
) -> Option<Result<(), FlushError>> {
    futures_lite::future::or(async { Some(p.wait_flushed(offset).await) }, async {
        glommio::timer::sleep(Duration::from_secs(secs)).await;
        None
    })
    .await
}

/// Turns on `flush.messages=1` for `p`: every append's flush is due.
fn flush_every_message(p: &Rc<Partition>) {
    let mut s = p.settings();
    s.flush_messages = Some(1);
    p.set_settings(s);
}

/// A wait that starts after the flush covering its offset failed (as
/// produce's `finish` does when it waited for another partition first) gets
/// the error, not silence.
#[test]
fn a_wait_after_a_failed_flush_gets_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = open(&path, 1 << 20);
        p.defer_file_work();
        flush_every_message(&p);
        p.unflushed_files.borrow_mut().push(failing_file());
        let r = append_due(&p).await;
        poll(|| p.flush_failed.get().is_some()).await;
        let got = wait_or_time_out(&p, r.last_offset + 1, 10).await;
        assert!(
            matches!(got, Some(Err(FlushError::Sync { .. }))),
            "wait_flushed({}) after its flush failed: {got:?} (flush_posted {}, flushed {})",
            r.last_offset + 1,
            p.flush_posted.get(),
            p.flushed_offset.get()
        );
    });
}

/// A flush that fails (J1, covering r1) and a later one that succeeds (J2,
/// not naming the failed file): r1 is never answered as synced.
#[test]
fn a_later_flush_does_not_cover_records_whose_flush_failed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = open(&path, 1 << 20);
        p.defer_file_work();
        flush_every_message(&p);
        let big = dirty_file(&path, 96);
        // Keep the flush thread busy so J1 and J2 queue behind it.
        let hold = crate::shard::flusher::sync(vec![big], None);
        p.unflushed_files.borrow_mut().push(failing_file());
        let r1 = append_due(&p).await; // J1: [failing, active]
        let r2 = append_due(&p).await; // J2: [active]
        hold.await.unwrap();
        poll(|| p.flush_failed.get().is_some()).await;
        let got = wait_or_time_out(&p, r1.last_offset + 1, 3).await;
        assert!(
            matches!(got, Some(Err(_))),
            "wait for r1 after its flush failed: {got:?} (expected a FlushError; flushed_offset {}, \
             r1 ends at {}, r2 at {})",
            p.flushed_offset.get(),
            r1.last_offset + 1,
            r2.last_offset + 1
        );
    });
}

/// A waiter registered while a flush covering it runs, then the log is cut
/// above the waiter's offset before that flush's answer is handled: the
/// flush leaves `flushed_offset` as it is, and the waiter gets a flush of
/// its own.
#[test]
fn a_waiter_across_a_truncation_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = open(&path, 1 << 20);
        p.defer_file_work();
        for _ in 0..4 {
            append(&p, &batch(-1, -1, -1, 3, false)).await.unwrap();
        }
        flush_every_message(&p);
        let big = dirty_file(&path, 96);
        let hold = crate::shard::flusher::sync(vec![big], None);
        p.start_flush(); // target 12
        let w = {
            let p = p.clone();
            glommio::spawn_local(async move { wait_or_time_out(&p, 6, 4).await })
        };
        futures_lite::future::yield_now().await;
        p.truncate_to(9).await.unwrap();
        assert_eq!(p.flush_posted.get(), 9);
        hold.await.unwrap();
        let got = w.await;
        assert!(
            got.is_some(),
            "wait_flushed(6) not answered (flushed {}, posted {}, leo {})",
            p.flushed_offset.get(),
            p.flush_posted.get(),
            p.log_end_offset()
        );
    });
}

/// A flush that comes due while a roll's renames wait on the I/O thread
/// (here: behind a job that holds the thread) is posted only once they
/// ran, with the directory's fsync: posted earlier, that fsync could run
/// before the renames, and records acknowledged in the new segment could
/// lose its name at a crash.
#[test]
fn a_flush_due_during_a_rolls_renames_waits_for_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = open(&path, 600);
        p.defer_file_work();
        // Up to the roll, with the next segment prepared.
        let per_segment = 600 / batch(-1, -1, -1, 3, false).len();
        let mut last = 0;
        for _ in 0..per_segment {
            last = append(&p, &batch(-1, -1, -1, 3, false))
                .await
                .unwrap()
                .last_offset;
        }
        assert_eq!(p.log.borrow().segment_base_offsets().len(), 1);
        poll(|| p.log.borrow().has_prepared_segment()).await;
        io_barrier().await.unwrap();
        flush_every_message(&p);
        p.wait_flushed(last + 1).await.unwrap();
        assert!(!p.dir_sync_due.get());
        // The I/O thread held: the roll's renames and the write wait.
        let (release, held) = std::sync::mpsc::channel::<()>();
        let hold = crate::shard::io::run_on_io(move || {
            let _ = held.recv();
        });
        let b = batch(-1, -1, -1, 3, false);
        let v = validate_batches(&b, usize::MAX).unwrap();
        p.ready_for_append(b.len() as u64, 3).await;
        let a = p.append(&b, &v, crate::shard::now_ms()).unwrap();
        assert_eq!(p.log.borrow().segment_base_offsets().len(), 2, "rolled");
        let posted = p.flushes_posted.borrow().len();
        // A flush comes due (as `flush.ms`'s timer or another waiter's
        // does): nothing is posted while the renames wait.
        p.start_flush();
        assert_eq!(
            p.flushes_posted.borrow().len(),
            posted,
            "a flush was posted before the renames ran"
        );
        assert!(p.flush_deferred.get());
        release.send(()).unwrap();
        hold.await.unwrap();
        let (r, due) = a.finish().await.unwrap();
        assert!(due);
        p.wait_flushed(r.last_offset + 1).await.unwrap();
        assert!(!p.flush_deferred.get());
        assert!(
            !p.dir_sync_due.get(),
            "the flush after the renames took the directory's fsync"
        );
        let base = p.log.borrow().segment_base_offsets()[1];
        assert!(path.join(segment_file_name(base, "log")).exists());
    });
}
