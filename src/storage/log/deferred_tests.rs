//! Tests of a log whose file work is deferred (as on a shard, see
//! `storage::file_jobs`): a roll swaps in the prepared segment and queues
//! the file work in order; without one it waits (or, past the segment's
//! limits, creates it); checkpoints, `.txnindex` appends and the renames of
//! deleted segments are queued; prepared segments never become part of the
//! log by accident.

use super::tests::{cfg, file_batches};
use super::*;
use crate::storage::batch::testutil::build_batch;
use crate::storage::batch::validate_batches;
use crate::storage::epoch_cache::LEADER_EPOCH_CHECKPOINT;
use crate::storage::segment::{prepared_path, segment_file_name};

/// Reserves one batch of `n` records at epoch `epoch`; gives the write, the
/// ticket and the file work the reservation queued.
fn reserve(
    log: &mut PartitionLog,
    n: i32,
    value_len: usize,
    epoch: i32,
) -> (PendingWrite, AppendTicket, Vec<FileJob>) {
    let buf = bytes::Bytes::from(build_batch(0, n, 1_000, value_len));
    let v = validate_batches(&buf, usize::MAX).unwrap();
    let (write, ticket) = log.reserve(&buf, &v, epoch, 1_000).unwrap();
    let jobs = log.take_file_jobs();
    (write.unwrap(), ticket, jobs)
}

/// Runs the jobs, the write and the commit, as a shard's I/O thread and
/// reactor would (jobs first).
fn land(log: &mut PartitionLog, write: PendingWrite, ticket: &AppendTicket, jobs: Vec<FileJob>) {
    for j in jobs {
        j.run().unwrap();
    }
    write.write_now().unwrap();
    for w in log.commit(ticket).unwrap() {
        w.write_now().unwrap();
    }
}

/// A log with deferred file work and a segment prepared.
fn deferred(dir: &Path, config: LogConfig) -> PartitionLog {
    let mut log = PartitionLog::open(dir, config).unwrap();
    log.defer_file_work();
    prepare(&mut log);
    log
}

fn prepare(log: &mut PartitionLog) {
    let prep = log.prepare_segment(0, true).expect("a preparation");
    assert!(log.prepare_segment(0, true).is_none(), "one at a time");
    assert!(log.preparing_segment());
    log.install_prepared(prep.create());
    assert!(log.has_prepared_segment());
}

fn names(jobs: &[FileJob]) -> Vec<&'static str> {
    jobs.iter().map(FileJob::what).collect()
}

#[test]
fn a_roll_swaps_in_the_prepared_segment_and_queues_its_file_work() {
    let dir = tempfile::tempdir().unwrap();
    let one = build_batch(0, 2, 0, 30).len() as u64;
    let config = LogConfig {
        segment_bytes: 2 * one,
        preallocate: true,
        ..cfg()
    };
    let mut log = deferred(dir.path(), config.clone());
    assert!(prepared_path(dir.path(), "log").exists());
    for _ in 0..2 {
        let (w, t, jobs) = reserve(&mut log, 2, 30, 0);
        assert!(jobs
            .iter()
            .all(|j| !matches!(j, FileJob::NameSegment { .. })));
        land(&mut log, w, &t, jobs);
    }
    assert!(
        !log.needs_prepared_segment(one, 2, 1_000),
        "one is prepared"
    );
    // The third append rolls: the prepared segment is swapped in at once,
    // its names and the old segment's last entry are queued, in order,
    // and no file of the new base offset exists before they run.
    let (w, t, jobs) = reserve(&mut log, 2, 30, 0);
    assert_eq!(log.segment_base_offsets(), vec![0, 4]);
    assert_eq!(
        names(&jobs),
        vec![
            "rolled segment's last index entry",
            "new segment's file names"
        ]
    );
    assert!(!dir.path().join(segment_file_name(4, "log")).exists());
    assert_eq!(w.at, 0, "the write goes to the start of the new segment");
    land(&mut log, w, &t, jobs);
    for ext in ["log", "index", "timeindex"] {
        assert!(dir.path().join(segment_file_name(4, ext)).exists());
        assert!(!prepared_path(dir.path(), ext).exists());
    }
    assert_eq!(
        file_batches(&dir.path().join(segment_file_name(4, "log"))).len(),
        1
    );
    // The old segment's reserved disk is released (its length is its data).
    let old = std::fs::metadata(dir.path().join(segment_file_name(0, "log"))).unwrap();
    assert_eq!(old.len(), 2 * one);
    // The next preparation is due; a clean close removes it again.
    assert!(!log.has_prepared_segment());
    prepare(&mut log);
    log.close().unwrap();
    assert!(!prepared_path(dir.path(), "log").exists());
    let log = PartitionLog::open(dir.path(), config).unwrap();
    assert_eq!(log.log_end_offset(), 6);
    assert_eq!(log.segment_base_offsets(), vec![0, 4]);
}

#[test]
fn a_roll_without_a_prepared_segment_waits_for_one() {
    let dir = tempfile::tempdir().unwrap();
    let one = build_batch(0, 2, 0, 30).len() as u64;
    let config = LogConfig {
        segment_bytes: 2 * one,
        ..cfg()
    };
    let mut log = PartitionLog::open(dir.path(), config).unwrap();
    log.defer_file_work();
    for _ in 0..2 {
        let (w, t, jobs) = reserve(&mut log, 2, 30, 0);
        land(&mut log, w, &t, jobs);
    }
    // A roll is due and nothing is prepared: the owner is told to wait...
    assert!(log.needs_prepared_segment(one, 2, 1_000));
    // ...and a reservation that does not lets the segment grow.
    let (w, t, jobs) = reserve(&mut log, 2, 30, 0);
    assert_eq!(log.segment_count(), 1);
    land(&mut log, w, &t, jobs);
    prepare(&mut log);
    assert!(!log.needs_prepared_segment(one, 2, 1_000));
    let (w, t, jobs) = reserve(&mut log, 2, 30, 0);
    assert_eq!(log.segment_base_offsets(), vec![0, 6]);
    land(&mut log, w, &t, jobs);
    assert_eq!(log.log_end_offset(), 8);
}

#[test]
fn a_roll_that_cannot_wait_creates_its_segment() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), cfg()).unwrap();
    log.defer_file_work();
    let (w, t, jobs) = reserve(&mut log, 2, 30, 0);
    land(&mut log, w, &t, jobs);
    // A follower's batch past the relative-offset range of the active
    // segment: it cannot go there, so the segment is created at once.
    let base = MAX_RELATIVE_OFFSET + 1;
    let buf = bytes::Bytes::from(build_batch(base, 1, 1_000, 10));
    let v = validate_batches(&buf, usize::MAX).unwrap();
    let (write, ticket) = log.reserve_replica(&buf, &v, 1_000).unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0, 2]);
    assert!(dir.path().join(segment_file_name(2, "log")).exists());
    let jobs = log.take_file_jobs();
    assert_eq!(names(&jobs), vec!["rolled segment's last index entry"]);
    // Its names are in the directory but not durable: the owner is told,
    // once, so that its next flush fsyncs the directory.
    assert!(log.take_segment_created_here());
    assert!(!log.take_segment_created_here());
    land(&mut log, write.unwrap(), &ticket, jobs);
    assert_eq!(log.log_end_offset(), base + 1);
}

#[test]
fn checkpoints_are_queued_in_order_and_memory_leads() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), cfg()).unwrap();
    log.defer_file_work();
    let (w, t, jobs) = reserve(&mut log, 2, 10, 1);
    assert_eq!(names(&jobs), vec!["leader-epoch checkpoint"]);
    assert_eq!(log.epoch_entries(), vec![(1, 0)]);
    land(&mut log, w, &t, jobs);
    assert!(log.assign_epoch_start_offset(3).unwrap());
    assert_eq!(log.epoch_entries(), vec![(1, 0), (3, 2)]);
    let mut later = log.take_file_jobs();
    assert_eq!(names(&later), vec!["leader-epoch checkpoint"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join(LEADER_EPOCH_CHECKPOINT)).unwrap(),
        "0\n1\n1 0\n"
    );
    later.remove(0).run().unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join(LEADER_EPOCH_CHECKPOINT)).unwrap(),
        "0\n2\n1 0\n3 2\n"
    );
    // A queued write that failed is written again at close.
    log.file_work_failed("leader-epoch checkpoint failed: test".into());
    assert!(log.reserve(&bytes::Bytes::new(), &[], 3, 0).is_err());
    std::fs::remove_file(dir.path().join(LEADER_EPOCH_CHECKPOINT)).unwrap();
    log.close().unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join(LEADER_EPOCH_CHECKPOINT)).unwrap(),
        "0\n2\n1 0\n3 2\n"
    );
}

#[test]
fn txn_index_appends_and_deleted_segment_renames_are_queued() {
    let dir = tempfile::tempdir().unwrap();
    let one = build_batch(0, 2, 0, 30).len() as u64;
    let config = LogConfig {
        segment_bytes: one,
        ..cfg()
    };
    // Three segments, written at once.
    let mut log = PartitionLog::open(dir.path(), config).unwrap();
    for _ in 0..3 {
        let (w, t, jobs) = reserve(&mut log, 2, 30, 0);
        land(&mut log, w, &t, jobs);
    }
    assert_eq!(log.segment_count(), 3);
    log.defer_file_work();
    let entry = AbortedTxn {
        producer_id: 9,
        first_offset: 4,
        last_offset: 5,
        last_stable_offset: 6,
    };
    log.append_txn_index(&entry).unwrap();
    let txn = dir.path().join(segment_file_name(4, TXN_INDEX_SUFFIX));
    assert!(!txn.exists());
    let jobs = log.take_file_jobs();
    assert_eq!(names(&jobs), vec![".txnindex entry"]);
    jobs.into_iter().for_each(|j| j.run().unwrap());
    assert_eq!(read_txn_index(&txn).unwrap(), Some(vec![entry]));

    let (deleted, _) = log.apply_retention(1_000, None, Some(1)).unwrap();
    assert_eq!(deleted.segments, 2);
    let log0 = dir.path().join(segment_file_name(0, "log"));
    assert!(log0.exists(), "renamed by the queued job only");
    let jobs = log.take_file_jobs();
    assert_eq!(
        names(&jobs),
        vec!["deleted segments' renames"; 2],
        "one per segment"
    );
    jobs.into_iter().for_each(|j| j.run().unwrap());
    assert!(!log0.exists());
    let renamed: Vec<_> = deleted.files.iter().filter(|f| f.exists()).collect();
    assert_eq!(renamed.len(), 6, "{:?}", deleted.files);
    assert_eq!(log.log_start_offset(), 4);
}

#[test]
fn a_prepared_segment_left_by_a_crash_is_not_part_of_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = deferred(dir.path(), cfg());
    let (w, t, jobs) = reserve(&mut log, 2, 30, 0);
    land(&mut log, w, &t, jobs);
    // Stop without closing (kill -9): the prepared files stay behind.
    drop(log);
    assert!(prepared_path(dir.path(), "log").exists());
    let log = PartitionLog::open(dir.path(), cfg()).unwrap();
    assert_eq!(log.log_end_offset(), 2);
    assert_eq!(log.segment_base_offsets(), vec![0]);
    for ext in ["log", "index", "timeindex"] {
        assert!(!prepared_path(dir.path(), ext).exists(), "{ext}");
    }
}

#[test]
fn a_segment_is_prepared_only_once_its_roll_is_near() {
    let dir = tempfile::tempdir().unwrap();
    let one = build_batch(0, 2, 0, 30).len() as u64;
    let config = LogConfig {
        segment_bytes: 4 * one,
        segment_ms: Some(10_000),
        ..cfg()
    };
    let mut log = PartitionLog::open(dir.path(), config).unwrap();
    log.defer_file_work();
    assert!(log.prepare_segment(1_000, false).is_none(), "an empty log");
    let (w, t, jobs) = reserve(&mut log, 2, 30, 0);
    land(&mut log, w, &t, jobs);
    assert!(
        log.prepare_segment(1_000, false).is_none(),
        "a quarter full"
    );
    // Half of segment.ms since the first append (at 1 000 ms).
    assert!(log.prepare_segment(6_001, false).is_some(), "half aged");
    log.install_prepared(Err(std::io::Error::other("test")));
    assert!(!log.has_prepared_segment());
    let (w, t, jobs) = reserve(&mut log, 2, 30, 0);
    land(&mut log, w, &t, jobs);
    assert!(log.prepare_segment(1_000, false).is_some(), "half full");
    assert!(
        !prepared_path(dir.path(), "log").exists(),
        "nothing created by the log itself"
    );
}
