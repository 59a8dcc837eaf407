//! Tests of the leader-epoch cache as the log keeps it (appends, open,
//! retention) and of truncation.

use super::*;
use crate::error::KafkaCode;
use crate::storage::batch::testutil::build_batch;
use crate::storage::batch::validate_batches;
use crate::storage::epoch_cache::LEADER_EPOCH_CHECKPOINT;
use crate::storage::log::tests::{cfg, check_index_file, consume_all, file_batches};

/// Appends one batch of `n` records as leader in `epoch`, timestamps from
/// 1000 + 10 × its base offset (ms); gives its base offset.
fn append_in(log: &mut PartitionLog, epoch: i32, n: i32) -> i64 {
    let buf = build_batch(0, n, 1_000 + 10 * log.log_end_offset(), 10);
    let v = validate_batches(&buf, usize::MAX).unwrap();
    log.append(&buf, &v, epoch, 0).unwrap().base_offset
}

/// Appends batches of 3 records in the epochs given; gives the log.
fn log_in_epochs(dir: &Path, config: LogConfig, epochs: &[i32]) -> PartitionLog {
    let mut log = PartitionLog::open(dir, config).unwrap();
    for &e in epochs {
        append_in(&mut log, e, 3);
    }
    log
}

fn checkpoint(dir: &Path) -> String {
    std::fs::read_to_string(dir.join(LEADER_EPOCH_CHECKPOINT)).unwrap()
}

/// Segments of one 3-record batch each.
fn one_batch_segments() -> LogConfig {
    LogConfig {
        segment_bytes: build_batch(0, 3, 1_000, 10).len() as u64,
        ..cfg()
    }
}

#[test]
fn appends_record_new_epochs_in_kafkas_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = log_in_epochs(dir.path(), cfg(), &[0, 0, 1, 3]);
    // A batch without an epoch (-1) and an older epoch change nothing.
    append_in(&mut log, -1, 3);
    append_in(&mut log, 2, 3);
    assert_eq!(log.epoch_entries(), vec![(0, 0), (1, 6), (3, 9)]);
    assert_eq!(checkpoint(dir.path()), "0\n3\n0 0\n1 6\n3 9\n");
    assert_eq!(log.latest_epoch(), Some(3));
    assert_eq!(log.end_offset_for_epoch(3), Some((3, 18)), "latest: LEO");
    assert_eq!(log.end_offset_for_epoch(0), Some((0, 6)));
    assert_eq!(log.end_offset_for_epoch(2), Some((1, 9)));
    assert_eq!(log.end_offset_for_epoch(4), None);
    assert_eq!(log.end_offset_for_epoch(-1), None);
    // The stamped epochs are the ones given.
    let stamped: Vec<i32> = consume_all(&log, u64::MAX)
        .iter()
        .map(|h| h.partition_leader_epoch)
        .collect();
    assert_eq!(stamped, vec![0, 0, 1, 3, -1, 2]);
    drop(log);
    let log = PartitionLog::open(dir.path(), cfg()).unwrap();
    assert_eq!(log.epoch_entries(), vec![(0, 0), (1, 6), (3, 9)]);
}

#[test]
fn an_empty_log_has_no_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), cfg()).unwrap();
    assert_eq!(log.latest_epoch(), None);
    assert_eq!(log.end_offset_for_epoch(0), None);
    assert!(
        !dir.path().join(LEADER_EPOCH_CHECKPOINT).exists(),
        "nothing to write yet"
    );
}

#[test]
fn a_missing_or_bad_checkpoint_is_rebuilt_from_the_batches() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = log_in_epochs(dir.path(), one_batch_segments(), &[0, 2, 2, 5]);
    let want = vec![(0, 0), (2, 3), (5, 9)];
    assert_eq!(log.epoch_entries(), want);
    let text = checkpoint(dir.path());
    log.close().unwrap();
    for bad in [
        None,
        Some("0\n3\n0 0\n"),
        Some("garbage"),
        Some("0\n2\n5 0\n2 3\n"),
    ] {
        let path = dir.path().join(LEADER_EPOCH_CHECKPOINT);
        match bad {
            None => std::fs::remove_file(&path).unwrap(),
            Some(b) => std::fs::write(&path, b).unwrap(),
        }
        let mut log = PartitionLog::open(dir.path(), one_batch_segments()).unwrap();
        assert_eq!(log.epoch_entries(), want, "{bad:?}");
        assert_eq!(checkpoint(dir.path()), text, "written again");
        log.close().unwrap();
    }
    // Kafka creates the file empty: an empty cache, left as it is.
    std::fs::write(dir.path().join(LEADER_EPOCH_CHECKPOINT), "").unwrap();
    let log = PartitionLog::open(dir.path(), one_batch_segments()).unwrap();
    assert!(log.epoch_entries().is_empty());
}

#[test]
fn open_drops_epochs_past_a_recovered_tail_and_adds_lost_ones() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in_epochs(dir.path(), cfg(), &[0, 1, 1, 2]);
    assert_eq!(log.epoch_entries(), vec![(0, 0), (1, 3), (2, 9)]);
    drop(log); // a crash
               // Recovery cuts the last batch (partial): epoch 2 had no data left.
    let path = dir.path().join(segment_file_name(0, "log"));
    let len = std::fs::metadata(&path).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - 5).unwrap();
    let log = PartitionLog::open(dir.path(), cfg()).unwrap();
    assert_eq!(log.log_end_offset(), 9);
    assert_eq!(log.epoch_entries(), vec![(0, 0), (1, 3)]);
    assert_eq!(checkpoint(dir.path()), "0\n2\n0 0\n1 3\n");
    drop(log);
    // A checkpoint that missed an epoch (its write lost in a crash) gets it
    // back from the active segment after an unclean shutdown.
    std::fs::write(dir.path().join(LEADER_EPOCH_CHECKPOINT), "0\n1\n0 0\n").unwrap();
    let log = PartitionLog::open(dir.path(), cfg()).unwrap();
    assert_eq!(log.epoch_entries(), vec![(0, 0), (1, 3)]);
}

#[test]
fn a_follower_records_the_leaders_epochs() {
    let (ld, fd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let leader = log_in_epochs(ld.path(), cfg(), &[0, 4, 4, 7]);
    let bytes =
        bytes::Bytes::from(std::fs::read(ld.path().join(segment_file_name(0, "log"))).unwrap());
    let v = validate_batches(&bytes, usize::MAX).unwrap();
    let mut follower = PartitionLog::open(fd.path(), cfg()).unwrap();
    let (w, ticket) = follower.reserve_replica(&bytes, &v, 0).unwrap();
    w.unwrap().write_now().unwrap();
    follower.commit(&ticket).unwrap();
    assert_eq!(follower.epoch_entries(), leader.epoch_entries());
    assert_eq!(follower.epoch_entries(), vec![(0, 0), (4, 3), (7, 9)]);
    assert_eq!(checkpoint(fd.path()), checkpoint(ld.path()));
}

#[test]
fn log_start_moves_keep_the_epoch_holding_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = log_in_epochs(dir.path(), one_batch_segments(), &[0, 0, 1, 1, 2]);
    assert_eq!(log.epoch_entries(), vec![(0, 0), (1, 6), (2, 12)]);
    let before = checkpoint(dir.path());
    log.delete_records_before(7).unwrap();
    assert_eq!(log.epoch_entries(), vec![(1, 7), (2, 12)]);
    assert_eq!(checkpoint(dir.path()), before, "written later, not at once");
    // Reopened without a clean close: the log start applies again.
    drop(log);
    let mut log = PartitionLog::open(dir.path(), one_batch_segments()).unwrap();
    assert_eq!(log.epoch_entries(), vec![(1, 7), (2, 12)]);
    // Retention past the first epoch.
    log.apply_retention(i64::MAX, None, Some(1)).unwrap();
    assert_eq!(log.log_start_offset(), 12);
    assert_eq!(log.epoch_entries(), vec![(2, 12)]);
    log.close().unwrap();
    assert_eq!(checkpoint(dir.path()), "0\n1\n2 12\n", "written at close");
}

#[test]
fn truncation_cuts_whole_batches_and_the_epochs_above() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        index_interval_bytes: 1,
        ..cfg()
    };
    let mut log = log_in_epochs(dir.path(), config.clone(), &[0, 0, 1, 2]);
    assert_eq!(log.epoch_entries(), vec![(0, 0), (1, 6), (2, 9)]);
    // Offset 7 is inside the batch 6..=8: the whole batch goes.
    assert_eq!(log.truncate_to(7).unwrap(), 6);
    assert_eq!(log.log_end_offset(), 6);
    assert_eq!(log.high_watermark(), 6);
    assert_eq!(log.epoch_entries(), vec![(0, 0)]);
    assert_eq!(checkpoint(dir.path()), "0\n1\n0 0\n");
    assert_eq!(log.end_offset_for_epoch(0), Some((0, 6)));
    let path = dir.path().join(segment_file_name(0, "log"));
    assert_eq!(file_batches(&path).len(), 2);
    check_index_file(dir.path(), 0);
    assert!(log.read(7, 1000, true).is_err(), "past the new LEO");
    assert_eq!(log.max_timestamp_offset().unwrap(), Some((5, 1_032)));
    // At or past the LEO: nothing changes.
    assert_eq!(log.truncate_to(6).unwrap(), 6);
    assert_eq!(log.truncate_to(100).unwrap(), 6);
    // The log goes on from there, in a new epoch.
    assert_eq!(append_in(&mut log, 3, 2), 6);
    assert_eq!(log.epoch_entries(), vec![(0, 0), (3, 6)]);
    let all = consume_all(&log, u64::MAX);
    let ranges: Vec<_> = all
        .iter()
        .map(|h| (h.base_offset, h.last_offset()))
        .collect();
    assert_eq!(ranges, vec![(0, 2), (3, 5), (6, 7)]);
    log.close().unwrap();
    let log = PartitionLog::open(dir.path(), config).unwrap();
    assert_eq!(log.log_end_offset(), 8);
    assert_eq!(log.epoch_entries(), vec![(0, 0), (3, 6)]);
    assert_eq!(consume_all(&log, u64::MAX), all);
}

#[test]
fn truncation_deletes_later_segments_and_reactivates_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = log_in_epochs(dir.path(), one_batch_segments(), &[0, 1, 2, 3, 4]);
    assert_eq!(log.segment_base_offsets(), vec![0, 3, 6, 9, 12]);
    // A cut at a segment's first batch deletes that segment too.
    assert_eq!(log.truncate_to(6).unwrap(), 6);
    assert_eq!(log.segment_base_offsets(), vec![0, 3]);
    for base in [6, 9, 12] {
        for ext in ["log", "index", "timeindex"] {
            let p = dir.path().join(segment_file_name(base, ext));
            assert!(!p.exists(), "{}", p.display());
            assert!(!PathBuf::from(format!("{}.deleted", p.display())).exists());
        }
    }
    assert_eq!(log.active_base_offset(), 3);
    assert_eq!(log.epoch_entries(), vec![(0, 0), (1, 3)]);
    // Inside a segment: it is cut and stays active.
    assert_eq!(log.truncate_to(4).unwrap(), 3);
    assert_eq!(log.segment_base_offsets(), vec![0]);
    assert_eq!(log.epoch_entries(), vec![(0, 0)]);
    // Appends continue in the segment the cut left active.
    assert_eq!(append_in(&mut log, 5, 3), 3);
    assert_eq!(log.segment_base_offsets(), vec![0, 3]);
    drop(log);
    let log = PartitionLog::open(dir.path(), one_batch_segments()).unwrap();
    assert_eq!(log.log_end_offset(), 6);
    assert_eq!(log.epoch_entries(), vec![(0, 0), (5, 3)]);
    assert_eq!(consume_all(&log, u64::MAX).len(), 2);
}

#[test]
fn truncation_at_or_below_the_log_start_starts_the_log_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = log_in_epochs(dir.path(), one_batch_segments(), &[0, 1, 2, 3]);
    log.delete_records_before(7).unwrap();
    assert_eq!(log.log_start_offset(), 7);
    std::fs::write(dir.path().join(CLEANER_CHECKPOINT), "9\n").unwrap();
    assert_eq!(log.truncate_to(5).unwrap(), 5);
    assert_eq!(
        (
            log.log_start_offset(),
            log.log_end_offset(),
            log.high_watermark()
        ),
        (5, 5, 5)
    );
    assert_eq!(log.segment_base_offsets(), vec![5]);
    assert!(log.epoch_entries().is_empty());
    assert_eq!(checkpoint(dir.path()), "0\n0\n");
    assert_eq!(
        crate::storage::read_offset_file(dir.path(), CLEANER_CHECKPOINT),
        Some(5)
    );
    assert_eq!(append_in(&mut log, 4, 3), 5);
    drop(log);
    let mut log = PartitionLog::open(dir.path(), one_batch_segments()).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (5, 8));
    assert_eq!(log.epoch_entries(), vec![(4, 5)]);
    // A cut whose batch starts at or below the log start empties the log
    // too: DeleteRecords to 6 inside the batch 5..=7, truncation to 7.
    log.delete_records_before(6).unwrap();
    assert_eq!(log.truncate_to(7).unwrap(), 5);
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (5, 5));
}

#[test]
fn truncation_drops_snapshots_and_aborted_entries_above_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = log_in_epochs(dir.path(), cfg(), &[0, 0, 0, 0]);
    for o in [3, 6, 9, 12] {
        std::fs::write(dir.path().join(format!("{o:020}.snapshot")), b"x").unwrap();
    }
    let aborted = |last: i64| AbortedTxn {
        producer_id: 1,
        first_offset: last - 1,
        last_offset: last,
        last_stable_offset: last + 1,
    };
    let idx = dir.path().join(segment_file_name(0, TXN_INDEX_SUFFIX));
    write_txn_index(&idx, &[aborted(4), aborted(8)]).unwrap();
    assert_eq!(log.truncate_to(6).unwrap(), 6);
    let snapshots: Vec<bool> = [3, 6, 9, 12]
        .iter()
        .map(|o| dir.path().join(format!("{o:020}.snapshot")).exists())
        .collect();
    assert_eq!(snapshots, vec![true, true, false, false]);
    assert_eq!(read_txn_index(&idx).unwrap(), Some(vec![aborted(4)]));
    assert_eq!(log.truncate_to(3).unwrap(), 3);
    assert!(!idx.exists(), "no entry left");
}

#[test]
fn truncation_waits_for_appends_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = log_in_epochs(dir.path(), cfg(), &[0, 0]);
    let buf = bytes::Bytes::from(build_batch(0, 3, 1_000, 10));
    let v = validate_batches(&buf, usize::MAX).unwrap();
    let (w, ticket) = log.reserve(&buf, &v, 0, 0).unwrap();
    let e = log.truncate_to(2).unwrap_err();
    assert!(matches!(
        e,
        StorageError::Inconsistent {
            what: Inconsistency::TruncateWithPendingAppends {
                offset: 2,
                log_end_offset: 6,
                next_offset: 9
            },
            ..
        }
    ));
    assert_eq!(e.code(), 56);
    w.unwrap().write_now().unwrap();
    log.commit(&ticket).unwrap();
    assert_eq!(log.truncate_to(2).unwrap(), 0);
    assert!(log.truncate_to(-1).is_err());
}

#[test]
fn a_new_leader_records_its_epoch_before_appending() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = log_in_epochs(dir.path(), cfg(), &[0, 3]);
    // Elected in epoch 5 at LEO 6: epoch 3 now ends there, and epoch 4
    // (never written here) is answered with epoch 3's end.
    assert!(log.assign_epoch_start_offset(5).unwrap());
    assert!(!log.assign_epoch_start_offset(5).unwrap());
    assert!(!log.assign_epoch_start_offset(4).unwrap());
    assert_eq!(log.epoch_entries(), vec![(0, 0), (3, 3), (5, 6)]);
    assert_eq!(checkpoint(dir.path()), "0\n3\n0 0\n3 3\n5 6\n");
    assert_eq!(log.end_offset_for_epoch(4), Some((3, 6)));
    assert_eq!(log.end_offset_for_epoch(5), Some((5, 6)));
    // Its first append in that epoch adds nothing more.
    assert_eq!(append_in(&mut log, 5, 2), 6);
    assert_eq!(log.epoch_entries(), vec![(0, 0), (3, 3), (5, 6)]);
    assert_eq!(log.end_offset_for_epoch(5), Some((5, 8)));
}
