//! Tests of the partition: markers, the LSO, aborted-transaction indexes,
//! snapshots and rebuilds.

use super::*;
use crate::producer_state::{Check, ProducerStateError};
use crate::shard::error::MarkerError;
use crate::storage::segment::segment_file_name;
use crate::storage::txn_index::{read_txn_index, AbortedTxn};
use crate::storage::{validate_batches, LogConfig};
use bytes::BytesMut;
use kafka_protocol::records::{Compression, RecordBatchEncoder, RecordEncodeOptions};
use std::collections::BTreeMap;
use std::path::Path;

/// A batch of `n` records (keys k0.., values v0..), transactional when
/// `txn`, for producer `pid`/`epoch` starting at sequence `seq` (-1 = none).
pub(crate) fn batch(pid: i64, epoch: i16, seq: i32, n: i64, txn: bool) -> bytes::Bytes {
    let recs: Vec<Record> = (0..n)
        .map(|i| Record {
            transactional: txn,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: pid,
            producer_epoch: epoch,
            timestamp_type: RecordTsType::Creation,
            offset: i,
            sequence: seq + i as i32,
            timestamp: 1_000 + i,
            key: Some(bytes::Bytes::from(format!("k{i}"))),
            value: Some(bytes::Bytes::from(format!("v{i}"))),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, recs.iter(), &opts).unwrap();
    buf.freeze()
}

pub(super) fn open(dir: &Path, segment_bytes: u64) -> Rc<Partition> {
    let mut settings =
        crate::cluster::topic_config::settings(&crate::config::Config::default(), &BTreeMap::new());
    settings.log = LogConfig {
        segment_bytes,
        ..LogConfig::default()
    };
    let log = PartitionLog::open(dir, settings.log.clone()).unwrap();
    Rc::new(Partition::new(
        Arc::from("t"),
        0,
        Uuid::nil(),
        log,
        settings,
    ))
}

/// Checks and appends one batch; gives its base offset or the producer
/// state's refusal (an invalid batch or a duplicate fails the test).
pub(super) fn produce(p: &Rc<Partition>, b: &bytes::Bytes) -> Result<i64, ProducerStateError> {
    let v = validate_batches(b, usize::MAX).expect("a valid batch");
    let headers: Vec<_> = v.iter().map(|b| b.header).collect();
    let check = p.producers.borrow().check(&headers)?;
    assert_eq!(check, Check::Append, "not a duplicate");
    Ok(p.append_now(b, &v, crate::shard::now_ms())
        .unwrap()
        .0
        .base_offset)
}

/// Writes a marker; gives its offset or the producer state's refusal (any
/// other error fails the test).
pub(super) async fn marker(
    p: &Rc<Partition>,
    producer_id: i64,
    epoch: i16,
    commit: bool,
    coordinator_epoch: i32,
) -> Result<i64, ProducerStateError> {
    match p
        .write_marker(producer_id, epoch, commit, coordinator_epoch)
        .await
    {
        Ok(offset) => Ok(offset),
        Err(MarkerError::Producer(e)) => Err(e),
        Err(e) => panic!("marker not written: {e}"),
    }
}

/// (batch offset ranges, LSO, aborted list) of a READ_COMMITTED read.
type CommittedRead = (Vec<(i64, i64)>, i64, Option<Vec<(i64, i64)>>);

fn committed_offsets(p: &Partition, from: i64) -> CommittedRead {
    let r = p
        .read_isolated(from, u64::MAX, true, READ_COMMITTED)
        .unwrap();
    let mut bytes = Vec::new();
    for reg in &r.read.regions {
        let mut b = vec![0u8; reg.len as usize];
        std::os::unix::fs::FileExt::read_exact_at(&*reg.file, &mut b, reg.position).unwrap();
        bytes.extend(b);
    }
    let mut ranges = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let h = BatchHeader::parse(&bytes[pos..]).unwrap();
        ranges.push((h.base_offset, h.last_offset()));
        pos += h.total_size();
    }
    (ranges, r.last_stable_offset, r.aborted)
}

#[test]
fn markers_lso_aborted_index_and_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = open(&path, 1 << 30);
        assert_eq!(produce(&p, &batch(-1, -1, -1, 2, false)), Ok(0)); // 0..=1
        assert_eq!(produce(&p, &batch(1, 0, 0, 2, true)), Ok(2)); // 2..=3 txn pid 1
        assert_eq!(p.last_stable_offset(), 2);
        assert_eq!(produce(&p, &batch(2, 0, 0, 1, true)), Ok(4)); // 4 txn pid 2
        assert_eq!(p.txns.borrow().ongoing_first_offset(2), Some(4));
        // Only the data before the first open transaction is readable.
        let (r, lso, aborted) = committed_offsets(&p, 0);
        assert_eq!((r, lso, aborted), (vec![(0, 1)], 2, Some(vec![])));
        assert!(committed_offsets(&p, 2).0.is_empty());
        let unc = p.read_isolated(2, u64::MAX, true, 0).unwrap();
        assert!(unc.read.bytes > 0 && unc.aborted.is_none());
        assert_eq!(unc.last_stable_offset, 2);

        assert_eq!(marker(&p, 1, 0, true, 5).await, Ok(5));
        assert_eq!(p.last_stable_offset(), 4);
        assert_eq!(marker(&p, 2, 0, false, 5).await, Ok(6));
        assert_eq!(p.last_stable_offset(), 7);
        let want = AbortedTxn {
            producer_id: 2,
            first_offset: 4,
            last_offset: 6,
            last_stable_offset: 7,
        };
        assert_eq!(p.txns.borrow().aborted(), &[want]);
        let idx = path.join(segment_file_name(0, "txnindex"));
        assert_eq!(std::fs::read(&idx).unwrap(), want.encode().to_vec());
        let (r, lso, aborted) = committed_offsets(&p, 0);
        assert_eq!(r, vec![(0, 1), (2, 3), (4, 4), (5, 5), (6, 6)]);
        assert_eq!((lso, aborted), (7, Some(vec![(2, 4)])));
        // From 5 the aborted transaction still overlaps (its marker is at 6).
        assert_eq!(committed_offsets(&p, 5).2, Some(vec![(2, 4)]));

        // An open transaction after the abort bounds the read again.
        assert_eq!(produce(&p, &batch(3, 0, 0, 2, true)), Ok(7)); // 7..=8
        let (r, lso, aborted) = committed_offsets(&p, 7);
        assert_eq!((r, lso, aborted), (vec![], 7, Some(vec![])));

        // A marker with a newer epoch fences the producer's old epoch.
        assert_eq!(marker(&p, 3, 1, false, 5).await, Ok(9));
        assert_eq!(p.producers.borrow().get(3).map(|e| e.epoch), Some(1));
        assert_eq!(
            produce(&p, &batch(3, 0, 2, 1, true)),
            Err(ProducerStateError::FencedEpoch {
                producer_id: 3,
                epoch: 0,
                current_epoch: 1
            })
        );
        assert_eq!(
            marker(&p, 3, 0, true, 5).await,
            Err(ProducerStateError::FencedEpoch {
                producer_id: 3,
                epoch: 0,
                current_epoch: 1
            })
        );
        // A marker from an older coordinator epoch is fenced.
        assert_eq!(
            marker(&p, 1, 0, true, 4).await,
            Err(ProducerStateError::CoordinatorFenced {
                producer_id: 1,
                coordinator_epoch: 4,
                latest: 5
            })
        );
        assert_eq!(p.last_stable_offset(), 10);
        let state = |p: &Partition| {
            let t = p.txns.borrow();
            (
                t.aborted().to_vec(),
                t.ongoing_count(),
                t.coordinator_epoch(1),
                p.last_stable_offset(),
                p.producers.borrow().snapshot(),
            )
        };
        let before = state(&p);
        assert_eq!(before.0.len(), 2);
        // An open transaction survives a restart too.
        assert_eq!(produce(&p, &batch(4, 0, 0, 1, true)), Ok(10));
        let before = (before.0, 1, before.2, 10, p.producers.borrow().snapshot());
        drop(p);

        // Reopen: the state is rebuilt from the log; a missing
        // .txnindex is rewritten with the same bytes.
        let bytes = std::fs::read(&idx).unwrap();
        std::fs::remove_file(&idx).unwrap();
        let p = open(&path, 1 << 30);
        assert_eq!(state(&p), before);
        assert_eq!(std::fs::read(&idx).unwrap(), bytes);
        drop(p);
        // A .txnindex that disagrees with the log is rewritten.
        std::fs::write(&idx, &bytes[..34]).unwrap();
        let p = open(&path, 1 << 30);
        assert_eq!(std::fs::read(&idx).unwrap(), bytes);
        assert_eq!(read_txn_index(&idx).unwrap().map(|v| v.len()), Some(2));
        assert_eq!(marker(&p, 4, 0, true, 5).await, Ok(11));
        assert_eq!(p.last_stable_offset(), 12);
    });
}

#[test]
fn txn_index_follows_segments_on_delete_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        // Small segments: every batch rolls a new one.
        let p = open(&path, 100);
        assert_eq!(produce(&p, &batch(1, 0, 0, 3, true)), Ok(0));
        assert_eq!(marker(&p, 1, 0, false, 0).await, Ok(3));
        assert_eq!(produce(&p, &batch(-1, -1, -1, 1, false)), Ok(4));
        let bases = p.log.borrow().segment_base_offsets();
        assert_eq!(bases, vec![0, 3, 4]);
        let idx = path.join(segment_file_name(3, "txnindex"));
        assert!(idx.exists());
        assert!(!path.join(segment_file_name(0, "txnindex")).exists());
        assert_eq!(p.txns.borrow().aborted().len(), 1);
        assert_eq!(p.delete_records(4).await.unwrap(), 4);
        assert!(!idx.exists());
        assert!(path
            .join(format!("{}.deleted", segment_file_name(3, "txnindex")))
            .exists());
        assert!(p.txns.borrow().aborted().is_empty());
        assert_eq!(committed_offsets(&p, 4).2, Some(vec![]));
    });
}

#[test]
fn snapshot_restores_the_same_state_as_a_full_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let state = |p: &Partition| {
            let t = p.txns.borrow();
            (
                t.aborted().to_vec(),
                t.ongoing_first_offset(3),
                t.coordinator_epoch(2),
                p.last_stable_offset(),
                p.producers.borrow().snapshot(),
            )
        };
        let p = open(&path, 1 << 30);
        assert_eq!(produce(&p, &batch(1, 0, 0, 3, false)), Ok(0)); // idempotent 0..=2
        assert_eq!(produce(&p, &batch(2, 0, 0, 2, true)), Ok(3)); // txn 3..=4
        assert_eq!(marker(&p, 2, 0, false, 1).await, Ok(5)); // aborted
        assert_eq!(produce(&p, &batch(3, 0, 0, 1, true)), Ok(6)); // open txn at 6
        p.write_snapshot().unwrap();
        assert_eq!(snapshot::list(&path).len(), 1);
        // After the snapshot: more batches, another abort.
        assert_eq!(produce(&p, &batch(1, 0, 3, 2, false)), Ok(7));
        assert_eq!(produce(&p, &batch(2, 1, 0, 1, true)), Ok(9));
        assert_eq!(marker(&p, 2, 1, false, 1).await, Ok(10));
        let before = state(&p);
        assert_eq!(before.0.len(), 2);
        assert_eq!(before.1, Some(6));
        drop(p);

        // From the snapshot (offset 7) plus the log after it.
        let p = open(&path, 1 << 30);
        assert_eq!(state(&p), before);
        // The last batch of producer 1 is still known as a duplicate.
        let retry = batch(1, 0, 3, 2, false);
        let v = validate_batches(&retry, usize::MAX).unwrap();
        let headers: Vec<_> = v.iter().map(|b| b.header).collect();
        assert!(matches!(
            p.producers.borrow().check(&headers),
            Ok(Check::Duplicate(_))
        ));
        drop(p);

        // Without any snapshot the full rebuild gives the same state.
        for (_, f) in snapshot::list(&path) {
            std::fs::remove_file(f).unwrap();
        }
        let p = open(&path, 1 << 30);
        assert_eq!(state(&p), before);
        drop(p);

        // A snapshot beyond the log end (the log lost its tail) is
        // dropped rather than trusted.
        let p = open(&path, 1 << 30);
        p.write_snapshot().unwrap();
        drop(p);
        std::fs::rename(snapshot::path(&path, 11), snapshot::path(&path, 50)).unwrap();
        let p = open(&path, 1 << 30);
        assert_eq!(state(&p), before);
        assert!(snapshot::list(&path).is_empty());
    });
}

#[test]
fn a_snapshot_below_the_log_start_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = open(&path, 1 << 30);
        assert_eq!(produce(&p, &batch(1, 0, 0, 1, true)), Ok(0)); // open txn
        p.write_snapshot().unwrap(); // at offset 1, pid 1 open
        assert_eq!(marker(&p, 1, 0, true, 0).await, Ok(1));
        assert_eq!(produce(&p, &batch(-1, -1, -1, 1, false)), Ok(2));
        assert_eq!(produce(&p, &batch(-1, -1, -1, 1, false)), Ok(3));
        // Up to the high watermark: the segment holding the marker goes.
        assert_eq!(p.delete_records(4).await.unwrap(), 4);
        assert_eq!(p.last_stable_offset(), 4);
        drop(p);
        // The marker between the snapshot (1) and the log start (4) is
        // gone: the snapshot would reopen the committed transaction.
        let p = open(&path, 1 << 30);
        assert_eq!(p.txns.borrow().ongoing_count(), 0);
        assert_eq!(p.last_stable_offset(), 4);
    });
}

/// The refusals of `Partition::produce` come back as typed errors with
/// their codes and client texts.
#[test]
fn produce_refusals_are_typed() {
    use crate::error::KafkaCode;
    use crate::shard::error::ProduceError;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = open(&path, 1 << 30);
        let refused = |o: ProduceOutcome| match o {
            ProduceOutcome::Refused(e) => e,
            _ => panic!("not refused"),
        };
        let mut two = BytesMut::from(&batch(-1, -1, -1, 1, false)[..]);
        two.extend_from_slice(&batch(-1, -1, -1, 1, false));
        let e = refused(p.produce(&two.freeze(), false, false, false, 0));
        assert!(matches!(e, ProduceError::TooManyBatches { count: 2 }));
        assert_eq!(e.code(), 87);
        // No bytes at all: CORRUPT_MESSAGE, from the validation or the
        // no-batch rule.
        let e = refused(p.produce(&bytes::Bytes::new(), false, false, false, 0));
        assert_eq!(e.code(), 2);
        let e = refused(p.produce(&batch(1, 0, 0, 1, true), false, false, false, 0));
        assert!(matches!(
            e,
            ProduceError::TransactionalIdRequired { producer_id: 1 }
        ));
        assert_eq!(e.code(), 53);
        let e = refused(p.produce(&batch(1, 0, 0, 1, true), true, true, false, 0));
        assert!(matches!(
            e,
            ProduceError::VerificationLost {
                producer_id: 1,
                epoch: 0
            }
        ));
        assert_eq!(e.code(), 48);
        // An idempotent batch with a sequence gap after an appended one.
        assert_eq!(produce(&p, &batch(2, 0, 0, 1, false)), Ok(0));
        let e = refused(p.produce(&batch(2, 0, 5, 1, false), false, false, false, 0));
        assert!(matches!(
            e,
            ProduceError::Producer(ProducerStateError::OutOfOrderSequence {
                producer_id: 2,
                base_sequence: 5,
                expected: 1
            })
        ));
        assert_eq!(e.code(), 45);
        assert_eq!(
            e.to_string(),
            "rejected by the idempotent producer checks (KIP-98)"
        );
    });
}

/// A follower (or a partition whose leader is gone) never appends a
/// client's records, whatever the handler decided from its image; a
/// partition led here again appends.
#[test]
fn produce_on_a_follower_is_refused() {
    use crate::cluster::leadership::{LeadershipError, Requester};
    use crate::error::KafkaCode;
    use crate::shard::error::ProduceError;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = open(&path, 1 << 30);
        p.set_leadership(false, 3);
        match p.produce(&batch(-1, -1, -1, 1, false), false, false, false, 0) {
            ProduceOutcome::Refused(e) => {
                assert!(matches!(
                    e,
                    ProduceError::Leadership(LeadershipError::NotLeader)
                ));
                assert_eq!(e.code(), 6);
            }
            _ => panic!("a follower appended"),
        }
        assert_eq!(p.log_end_offset(), 0);
        assert_eq!(
            p.check_access(Requester::Client, Some(2)),
            Err(LeadershipError::FencedLeaderEpoch {
                requested: 2,
                current: 3
            })
        );
        p.set_leadership(true, 4);
        assert_eq!(p.check_access(Requester::Client, Some(4)), Ok(()));
        assert_eq!(produce(&p, &batch(-1, -1, -1, 1, false)), Ok(0));
    });
}

/// A follower's partition takes the leader's batches as they are and ends
/// with the same producer and transaction state: a retried batch is a
/// duplicate on it too, and an open transaction holds its LSO.
#[test]
fn a_replica_append_keeps_offsets_and_rebuilds_producer_state() {
    let (ld, fd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let leader = open(ld.path(), 1 << 20);
    let follower = open(fd.path(), 1 << 20);
    produce(&leader, &batch(7, 0, 0, 3, false)).unwrap();
    produce(&leader, &batch(7, 0, 3, 2, false)).unwrap();
    produce(&leader, &batch(8, 0, 0, 4, true)).unwrap();
    // What a follower fetches: the leader's batches from offset 0.
    let path = ld.path().join(segment_file_name(0, "log"));
    let bytes = bytes::Bytes::from(std::fs::read(&path).unwrap());
    let v = validate_batches(&bytes, usize::MAX).unwrap();
    let mut a = follower.append_replica(&bytes, &v, 5_000).unwrap();
    a.reported = true;
    let outcome = match (a.in_flight.take(), a.write.take()) {
        (Some(f), _) => futures_lite::future::block_on(f),
        (None, Some(w)) => w.write_now(),
        (None, None) => Ok(()),
    };
    follower.written(a.seq, outcome);
    assert_eq!(follower.log_end_offset(), 9);
    assert_eq!(
        std::fs::read(fd.path().join(segment_file_name(0, "log"))).unwrap(),
        std::fs::read(&path).unwrap()
    );
    // The retry of producer 7's second batch is a duplicate on the follower.
    let retry = batch(7, 0, 3, 2, false);
    let headers: Vec<_> = validate_batches(&retry, usize::MAX)
        .unwrap()
        .iter()
        .map(|b| b.header)
        .collect();
    assert!(
        matches!(
            follower.producers.borrow().check(&headers),
            Ok(Check::Duplicate { .. })
        ),
        "a duplicate on the follower"
    );
    // Producer 8's transaction is open there too: the LSO is its first offset.
    assert_eq!(
        follower.txns.borrow().last_stable_offset(0, 9),
        5,
        "the open transaction's first offset"
    );
}

/// KIP-966: a leader's high watermark moves only while the ISR is at least
/// the effective `min.insync.replicas`, and again once it is.
#[test]
fn the_high_watermark_waits_while_the_isr_is_below_min_isr() {
    let dir = tempfile::tempdir().unwrap();
    let p = open(dir.path(), 1 << 20);
    let mut s = p.settings();
    s.min_insync_replicas = 2;
    p.set_settings(s);
    let reg = |isr: &[i32], partition_epoch: i32| crate::cluster::metadata::PartitionRegistration {
        replicas: vec![1, 2, 3],
        isr: isr.to_vec(),
        elr: vec![],
        last_known_elr: vec![],
        leader: 1,
        leader_epoch: 0,
        partition_epoch,
        adding_replicas: vec![],
        removing_replicas: vec![],
    };
    p.set_registration(1, &reg(&[1, 2], 0), 0);
    produce(&p, &batch(-1, -1, -1, 3, false)).unwrap();
    p.follower_fetched(2, 3, true, 1);
    assert_eq!(p.high_watermark(), 3, "ISR of 2 at min ISR 2");
    // The ISR shrinks to the leader alone: appends stay above the HW, even
    // with a follower that fetched them (it is not in the ISR).
    p.set_registration(1, &reg(&[1], 1), 2);
    produce(&p, &batch(-1, -1, -1, 2, false)).unwrap();
    p.follower_fetched(2, 5, true, 3);
    p.follower_fetched(3, 5, true, 3);
    assert_eq!(p.high_watermark(), 3, "below min ISR: the HW waits");
    // min.insync.replicas 1 lets it move; back at 2 with the follower in
    // the ISR it moves too.
    let mut s = p.settings();
    s.min_insync_replicas = 1;
    p.set_settings(s.clone());
    assert_eq!(p.high_watermark(), 5);
    produce(&p, &batch(-1, -1, -1, 1, false)).unwrap();
    s.min_insync_replicas = 2;
    p.set_settings(s);
    p.set_registration(1, &reg(&[1, 2], 2), 4);
    p.follower_fetched(2, 6, true, 5);
    assert_eq!(p.high_watermark(), 6);
}

/// During a reassignment the replication factor (what
/// UnderReplicatedPartitions compares the ISR with) leaves out the replicas
/// being added, as Kafka counts it.
#[test]
fn replicas_being_added_do_not_count_as_missing_from_the_isr() {
    use crate::cluster::metadata::PartitionRegistration;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    glommio::LocalExecutor::default().run(async move {
        let p = open(&path, 1 << 30);
        let mut reg = PartitionRegistration {
            replicas: vec![2, 3, 1],
            isr: vec![1],
            elr: vec![],
            last_known_elr: vec![],
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 1,
            adding_replicas: vec![2, 3],
            removing_replicas: vec![1],
        };
        p.set_registration(1, &reg, 0);
        assert_eq!((p.isr_size(), p.replica_count()), (1, 1));
        reg.adding_replicas.clear();
        reg.removing_replicas.clear();
        p.set_registration(1, &reg, 0);
        assert_eq!((p.isr_size(), p.replica_count()), (1, 3));
    });
}

/// After a restart a replicated leader's high watermark starts from the
/// checkpoint, not from the recovered LEO: records above it stay invisible
/// until a follower's fetch shows it has them (Kafka's
/// `replication-offset-checkpoint`); a partition with one replica jumps to
/// its LEO; one missing from the checkpoint starts at its log start.
#[test]
fn a_restarted_leader_starts_from_the_checkpointed_high_watermark() {
    use crate::cluster::metadata::PartitionRegistration;
    let dir = tempfile::tempdir().unwrap();
    {
        let p = open(dir.path(), 1 << 20);
        for _ in 0..4 {
            produce(&p, &batch(-1, -1, -1, 5, false)).unwrap();
        }
        assert_eq!(p.log_end_offset(), 20);
        p.close().unwrap();
    }
    let reopen = |checkpointed: Option<i64>| {
        let settings = crate::cluster::topic_config::settings(
            &crate::config::Config::default(),
            &BTreeMap::new(),
        );
        let mut log = PartitionLog::open(dir.path(), settings.log.clone()).unwrap();
        log.restore_high_watermark(checkpointed);
        Rc::new(Partition::new(
            Arc::from("t"),
            0,
            Uuid::nil(),
            log,
            settings,
        ))
    };
    let replicated = PartitionRegistration {
        replicas: vec![1, 2, 3],
        isr: vec![1, 2, 3],
        elr: vec![],
        last_known_elr: vec![],
        leader: 1,
        leader_epoch: 2,
        partition_epoch: 5,
        adding_replicas: vec![],
        removing_replicas: vec![],
    };
    glommio::LocalExecutor::default().run(async move {
        let p = reopen(Some(10));
        p.set_registration(1, &replicated, 1_000);
        assert_eq!(p.log_end_offset(), 20);
        assert_eq!(p.high_watermark(), 10, "not the recovered LEO");
        p.follower_fetched(2, 20, true, 1_001);
        assert_eq!(p.high_watermark(), 10, "follower 3 has not fetched");
        p.follower_fetched(3, 15, true, 1_002);
        assert_eq!(p.high_watermark(), 15);
        p.follower_fetched(3, 20, true, 1_003);
        assert_eq!(p.high_watermark(), 20);
        p.close().unwrap();

        // A checkpoint above the log end (the log was cut) is clamped.
        let p = reopen(Some(99));
        p.set_registration(1, &replicated, 2_000);
        assert_eq!(p.high_watermark(), 20);
        p.close().unwrap();

        // Missing from every checkpoint: the log start, as Kafka.
        let p = reopen(None);
        p.set_registration(2, &replicated, 3_000);
        assert_eq!(p.high_watermark(), 0);
        p.close().unwrap();

        // One replica: the high watermark is the LEO.
        let single = PartitionRegistration {
            replicas: vec![1],
            isr: vec![1],
            ..replicated.clone()
        };
        let p = reopen(Some(10));
        p.set_registration(1, &single, 4_000);
        assert_eq!(p.high_watermark(), 20);
    });
}
