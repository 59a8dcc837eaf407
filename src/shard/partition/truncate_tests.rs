//! Tests of truncation on the partition: the log, the leader epochs and the
//! producer and transaction state rebuilt for the shorter log.

use std::rc::Rc;

use super::super::tests::{batch, marker, open, produce};
use super::*;
use crate::producer_state::{Check, ProducerStateError};

/// The producer state's verdict on `b` (a duplicate, the next batch, or why
/// not), without appending it.
fn check(p: &Partition, b: &bytes::Bytes) -> Result<Check, ProducerStateError> {
    let v = crate::storage::validate_batches(b, usize::MAX).expect("a valid batch");
    let headers: Vec<_> = v.iter().map(|b| b.header).collect();
    p.producers.borrow().check(&headers)
}

/// As leader: epoch 0 producer 1 offsets 0..=2 (seq 0), epoch 1 producer 1
/// 3..=5 (seq 3), epoch 2 producer 1 6..=8 (seq 6) and producer 2's
/// transaction 9..=10, still open.
fn leader_in_three_epochs(dir: &std::path::Path) -> Rc<Partition> {
    let p = open(dir, 1 << 30);
    p.set_leadership(true, 0);
    assert_eq!(produce(&p, &batch(1, 0, 0, 3, false)), Ok(0));
    p.set_leadership(true, 1);
    assert_eq!(produce(&p, &batch(1, 0, 3, 3, false)), Ok(3));
    p.write_snapshot().unwrap(); // at 6
    p.set_leadership(true, 2);
    assert_eq!(produce(&p, &batch(1, 0, 6, 3, false)), Ok(6));
    assert_eq!(produce(&p, &batch(2, 0, 0, 2, true)), Ok(9));
    p.write_snapshot().unwrap(); // at 11
    p
}

#[test]
fn epochs_of_a_leader_and_their_end_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = leader_in_three_epochs(&path);
        assert_eq!(p.latest_epoch(), Some(2));
        assert_eq!(p.end_offset_for_epoch(0), Some((0, 3)));
        assert_eq!(p.end_offset_for_epoch(1), Some((1, 6)));
        assert_eq!(p.end_offset_for_epoch(2), Some((2, 11)), "the LEO");
        assert_eq!(p.end_offset_for_epoch(3), None);
        assert_eq!(p.end_offset_for_epoch(-1), None);
    });
}

#[test]
fn truncation_mid_epoch_rebuilds_producer_and_transaction_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = leader_in_three_epochs(&path);
        assert_eq!(p.last_stable_offset(), 9, "producer 2's transaction");
        assert!(matches!(
            check(&p, &batch(1, 0, 6, 3, false)),
            Ok(Check::Duplicate(_))
        ));
        // Offset 7 is inside epoch 2's first batch (6..=8): it goes whole.
        assert_eq!(p.truncate_to(7).await.unwrap(), 6);
        assert_eq!(p.log_end_offset(), 6);
        assert_eq!(p.latest_epoch(), Some(1));
        assert_eq!(p.end_offset_for_epoch(1), Some((1, 6)));
        assert_eq!(p.end_offset_for_epoch(2), None);
        // The snapshot above the new LEO is gone; the one at 6 is kept.
        let offsets: Vec<i64> = snapshot::list(&path).into_iter().map(|(o, _)| o).collect();
        assert_eq!(offsets, vec![6]);
        // The transaction opened in the cut part no longer holds the LSO.
        assert_eq!(p.txns.borrow().ongoing_count(), 0);
        assert_eq!(p.last_stable_offset(), 6);
        assert!(p.flushed_offset.get() <= 6);
        // Producer 1 continues at sequence 6: the cut batch is not a
        // duplicate any more, and the one after it is out of order.
        assert!(matches!(
            check(&p, &batch(1, 0, 9, 1, false)),
            Err(ProducerStateError::OutOfOrderSequence { expected: 6, .. })
        ));
        p.set_leadership(true, 3);
        assert_eq!(produce(&p, &batch(1, 0, 6, 3, false)), Ok(6));
        assert_eq!(p.end_offset_for_epoch(1), Some((1, 6)));
        assert_eq!(p.end_offset_for_epoch(3), Some((3, 9)));
        // Producer 2 starts its transaction again.
        assert_eq!(produce(&p, &batch(2, 0, 0, 2, true)), Ok(9));
        assert_eq!(p.last_stable_offset(), 9);
        assert_eq!(marker(&p, 2, 0, true, 0).await, Ok(11));
        assert_eq!(p.last_stable_offset(), 12);
        let state = p.producers.borrow().snapshot();
        drop(p);
        // A restart finds the same log, epochs and producers.
        let p = open(&path, 1 << 30);
        assert_eq!(p.log_end_offset(), 12);
        assert_eq!(p.end_offset_for_epoch(1), Some((1, 6)));
        assert_eq!(p.latest_epoch(), Some(3));
        assert_eq!(p.producers.borrow().snapshot(), state);
        assert_eq!(p.last_stable_offset(), 12);
    });
}

#[test]
fn truncation_to_the_log_start_forgets_every_producer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = leader_in_three_epochs(&path);
        assert_eq!(p.truncate_to(0).await.unwrap(), 0);
        assert_eq!((p.log_start_offset(), p.log_end_offset()), (0, 0));
        assert_eq!(p.latest_epoch(), None);
        assert!(snapshot::list(&path).is_empty());
        assert!(p.producers.borrow().snapshot().is_empty());
        assert_eq!(p.last_stable_offset(), 0);
        // Nothing to cut: the same LEO back.
        assert_eq!(p.truncate_to(5).await.unwrap(), 0);
    });
}

#[test]
fn truncation_waits_for_a_compaction_pass() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = leader_in_three_epochs(&path);
        p.compacting.set(true);
        let e = p.truncate_to(3).await.unwrap_err();
        assert!(matches!(
            e,
            StorageError::Inconsistent {
                what: Inconsistency::TruncateDuringCompaction { offset: 3 },
                ..
            }
        ));
        assert_eq!(p.log_end_offset(), 11);
        p.compacting.set(false);
        assert_eq!(p.truncate_to(3).await.unwrap(), 3);
    });
}

#[test]
fn a_snapshot_written_across_a_truncation_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = leader_in_three_epochs(&path);
        let before = p.truncations.get();
        assert_eq!(p.truncate_to(3).await.unwrap(), 3);
        // A background snapshot captured before the truncation lands after it.
        std::fs::write(snapshot::path(&path, 11), b"stale").unwrap();
        p.drop_snapshot_if_truncated(before, 11);
        assert!(!snapshot::path(&path, 11).exists());
        // One captured after it stays.
        std::fs::write(snapshot::path(&path, 3), b"fresh").unwrap();
        p.drop_snapshot_if_truncated(p.truncations.get(), 3);
        assert!(snapshot::path(&path, 3).exists());
    });
}
