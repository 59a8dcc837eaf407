//! Unit tests of the share-partition window (Kafka's SharePartitionTest
//! and ShareFetchAcknowledgeRequestTest scenarios, in this crate's terms).

use super::*;

fn sp() -> SharePartition {
    SharePartition::new(
        0,
        ShareConfig {
            lock_duration_ms: 1000,
            delivery_count_limit: 3,
            max_record_locks: 100,
            dead_letter: false,
        },
    )
}

fn range(first: i64, last: i64, delivery_count: i16) -> AcquiredRange {
    AcquiredRange {
        first,
        last,
        delivery_count,
    }
}

fn offsets(from: i64, to: i64) -> Vec<i64> {
    (from..to).collect()
}

#[test]
fn two_members_split_records_with_no_duplicates() {
    let mut p = sp();
    assert_eq!(p.acquire("a", &offsets(0, 10), 5, 0), vec![range(0, 4, 1)]);
    assert_eq!(
        p.fetch_offset(),
        5,
        "the window ends after what was acquired"
    );
    // b reads from the fetch offset: the next five.
    assert_eq!(p.acquire("b", &offsets(5, 10), 5, 0), vec![range(5, 9, 1)]);
    p.acknowledge("a", 0, 4, AckType::Accept, 10).unwrap();
    assert_eq!(p.start_offset(), 5, "the SPSO moves past accepted records");
    p.acknowledge("b", 5, 9, AckType::Accept, 10).unwrap();
    assert_eq!((p.start_offset(), p.end_offset()), (10, 10));
    assert_eq!(p.snapshot(), (10, vec![]));
}

#[test]
fn release_redelivers_with_the_next_delivery_count() {
    let mut p = sp();
    p.acquire("a", &offsets(0, 4), 10, 0);
    p.acknowledge("a", 1, 2, AckType::Release, 5).unwrap();
    assert_eq!(p.fetch_offset(), 1);
    assert_eq!(p.acquire("b", &offsets(1, 4), 10, 6), vec![range(1, 2, 2)]);
    assert_eq!(
        p.state(1),
        Some((
            RecordState::Acquired {
                member: "b".into(),
                deadline_ms: 1006
            },
            2
        ))
    );
}

#[test]
fn reject_is_never_delivered_again() {
    let mut p = sp();
    p.acquire("a", &offsets(0, 3), 10, 0);
    p.acknowledge("a", 1, 1, AckType::Reject, 1).unwrap();
    p.acknowledge("a", 0, 0, AckType::Accept, 1).unwrap();
    assert_eq!(
        p.start_offset(),
        2,
        "0 accepted and 1 rejected are both done"
    );
    p.acknowledge("a", 2, 2, AckType::Release, 1).unwrap();
    assert_eq!(p.acquire("a", &offsets(2, 3), 10, 2), vec![range(2, 2, 2)]);
}

#[test]
fn an_expired_lock_releases_and_the_limit_archives() {
    let mut p = sp();
    for round in 1..=3i16 {
        let now = i64::from(round) * 10_000;
        assert_eq!(
            p.acquire("a", &offsets(0, 2), 10, now),
            vec![range(0, 1, round)]
        );
        assert_eq!(p.next_deadline(), Some(now + 1000));
        assert_eq!(p.expire(now + 999), 0, "not yet");
        assert_eq!(p.expire(now + 1000), 2);
    }
    // Delivered three times (the limit): archived, the SPSO moves on.
    assert_eq!(p.start_offset(), 2);
    assert_eq!(p.acquire("a", &offsets(0, 2), 10, 50_000), vec![]);
}

#[test]
fn only_the_holder_may_acknowledge_and_nothing_changes_on_refusal() {
    let mut p = sp();
    p.acquire("a", &offsets(0, 4), 10, 0);
    let before = p.snapshot();
    assert_eq!(
        p.acknowledge("b", 0, 1, AckType::Accept, 1),
        Err(ShareError::InvalidRecordState {
            offset: 0,
            member: "b".into()
        })
    );
    // A range running past what a holds is refused whole.
    assert_eq!(
        p.acknowledge("a", 2, 5, AckType::Accept, 1),
        Err(ShareError::InvalidRecordState {
            offset: 4,
            member: "a".into()
        })
    );
    assert_eq!(p.snapshot(), before);
    assert_eq!(
        p.acknowledge("a", 3, 2, AckType::Accept, 1),
        Err(ShareError::InvalidRange { first: 3, last: 2 })
    );
    // Acknowledged twice: the second is refused.
    p.acknowledge("a", 0, 0, AckType::Accept, 1).unwrap();
    assert!(p.acknowledge("a", 1, 1, AckType::Accept, 1).is_ok());
    assert!(matches!(
        p.acknowledge("a", 2, 2, AckType::Accept, 1)
            .and_then(|_| p.acknowledge("a", 2, 2, AckType::Accept, 1)),
        Err(ShareError::InvalidRecordState { offset: 2, .. })
    ));
}

#[test]
fn renew_keeps_the_lock_and_a_departed_member_releases() {
    let mut p = sp();
    p.acquire("a", &offsets(0, 3), 10, 0);
    p.acknowledge("a", 0, 0, AckType::Renew, 900).unwrap();
    assert_eq!(p.expire(1000), 2, "1 and 2 expire; 0 was renewed");
    assert!(matches!(
        p.state(0),
        Some((
            RecordState::Acquired {
                deadline_ms: 1900,
                ..
            },
            1
        ))
    ));
    assert_eq!(p.release_member("a"), 1);
    assert_eq!(
        p.acquire("b", &offsets(0, 3), 10, 2000),
        vec![range(0, 2, 2)]
    );
}

#[test]
fn offsets_without_records_are_archived_gaps() {
    let mut p = sp();
    // Offsets 2-3 were compacted away, 5 is a control record.
    assert_eq!(
        p.acquire("a", &[0, 1, 4, 6], 10, 0),
        vec![range(0, 1, 1), range(4, 4, 1), range(6, 6, 1)]
    );
    assert_eq!(p.state(2), Some((RecordState::Archived, 0)));
    assert_eq!(p.state(5), Some((RecordState::Archived, 0)));
    p.acknowledge("a", 0, 1, AckType::Accept, 1).unwrap();
    assert_eq!(p.start_offset(), 4, "the gap is finished too");
    // A Gap acknowledgement may name offsets already archived.
    p.acknowledge("a", 5, 5, AckType::Gap, 1).unwrap();
    assert_eq!(p.end_offset(), 7);
}

#[test]
fn the_window_holds_at_most_max_record_locks() {
    let mut p = SharePartition::new(
        100,
        ShareConfig {
            max_record_locks: 4,
            ..ShareConfig::default()
        },
    );
    assert_eq!(
        p.acquire("a", &offsets(100, 110), 10, 0),
        vec![range(100, 103, 1)]
    );
    assert_eq!(p.acquire("b", &offsets(104, 110), 10, 0), vec![]);
    p.acknowledge("a", 100, 101, AckType::Accept, 1).unwrap();
    assert_eq!(
        p.acquire("b", &offsets(104, 110), 10, 1),
        vec![range(104, 105, 1)]
    );
}

#[test]
fn the_snapshot_restores_the_window_with_acquired_records_available() {
    let mut p = sp();
    p.acquire("a", &offsets(0, 8), 10, 0);
    p.acknowledge("a", 0, 0, AckType::Release, 1).unwrap();
    p.acknowledge("a", 1, 2, AckType::Accept, 1).unwrap();
    p.acknowledge("a", 3, 3, AckType::Reject, 1).unwrap();
    let (start, batches) = p.snapshot();
    assert_eq!(start, 0);
    assert_eq!(
        batches,
        vec![
            StateBatch {
                first: 0,
                last: 0,
                state: 0,
                delivery_count: 1
            },
            StateBatch {
                first: 1,
                last: 2,
                state: 2,
                delivery_count: 1
            },
            StateBatch {
                first: 3,
                last: 3,
                state: 4,
                delivery_count: 1
            },
            StateBatch {
                first: 4,
                last: 7,
                state: 0,
                delivery_count: 1
            },
        ]
    );
    let mut q = SharePartition::from_snapshot(start, &batches, ShareConfig::default());
    assert_eq!(q.snapshot(), (start, batches));
    // A new leader delivers 0 and 4-7 again, with their next delivery count.
    assert_eq!(
        q.acquire("b", &offsets(0, 10), 20, 5),
        vec![range(0, 0, 2), range(4, 7, 2), range(8, 9, 1)]
    );
    // Offsets between persisted batches were never delivered.
    let r = SharePartition::from_snapshot(
        10,
        &[StateBatch {
            first: 12,
            last: 12,
            state: 2,
            delivery_count: 1,
        }],
        ShareConfig::default(),
    );
    assert_eq!(r.fetch_offset(), 10);
    assert_eq!(r.state(11), Some((RecordState::Available, 0)));
}

#[test]
fn reset_moves_the_start() {
    let mut p = sp();
    p.acquire("a", &offsets(0, 5), 10, 0);
    p.reset(3);
    assert_eq!((p.start_offset(), p.fetch_offset()), (3, 5));
    assert!(p.state(2).is_none());
    p.reset(20);
    assert_eq!(
        (p.start_offset(), p.end_offset(), p.fetch_offset()),
        (20, 20, 20)
    );
}

#[test]
fn a_seeded_random_run_keeps_every_record_with_one_holder_at_most() {
    // Members acquire, acknowledge, release, expire and leave at random;
    // every offset is delivered to one member at a time, its delivery
    // count never passes the limit, and every record ends accepted or
    // archived once the window drains.
    let mut p = sp();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let members = ["a", "b", "c"];
    let log_end = 300i64;
    let mut now = 0i64;
    for _ in 0..5000 {
        now += next(400) as i64;
        let m = members[next(3) as usize];
        match next(5) {
            0 | 1 => {
                let from = p.fetch_offset();
                let recs: Vec<i64> = (from..log_end).filter(|o| o % 7 != 3).collect();
                p.acquire(m, &recs, 1 + next(20) as usize, now);
            }
            2 => {
                // Acknowledge a run this member holds.
                let held: Vec<i64> = (p.start_offset()..p.end_offset())
                    .filter(|o| matches!(p.state(*o), Some((RecordState::Acquired { member, .. }, _)) if member == m))
                    .collect();
                if let Some(&o) = held.first() {
                    let ack = [
                        AckType::Accept,
                        AckType::Release,
                        AckType::Reject,
                        AckType::Renew,
                    ][next(4) as usize];
                    p.acknowledge(m, o, o, ack, now).unwrap();
                }
            }
            3 => {
                p.expire(now);
            }
            _ => {
                if next(10) == 0 {
                    p.release_member(m);
                }
            }
        }
        for o in p.start_offset()..p.end_offset() {
            if let Some((_, count)) = p.state(o) {
                assert!(count <= 3, "offset {o} delivered {count} times");
            }
        }
    }
    // Drain: accept whatever is held, expire the rest until done.
    for _ in 0..100 {
        now += 2000;
        p.expire(now);
        for m in members {
            let from = p.fetch_offset();
            let recs: Vec<i64> = (from..log_end).filter(|o| o % 7 != 3).collect();
            for r in p.acquire(m, &recs, 50, now) {
                p.acknowledge(m, r.first, r.last, AckType::Accept, now)
                    .unwrap();
            }
        }
    }
    assert_eq!((p.start_offset(), p.end_offset()), (log_end, log_end));
}

#[test]
fn acknowledging_past_the_window_is_an_invalid_request() {
    let mut p = sp();
    p.acquire("a", &offsets(0, 2), 10, 0);
    // Kafka: "Batch record not found" (INVALID_REQUEST), nothing changes.
    assert_eq!(
        p.acknowledge("a", 50, 50, AckType::Accept, 1),
        Err(ShareError::PastWindow { first: 50, end: 2 })
    );
    assert!(p.acknowledge("a", 0, 1, AckType::Accept, 1).is_ok());
}

#[test]
fn aborted_records_are_archived_and_the_start_moves_past_them() {
    let mut p = sp();
    // An aborted transaction at 0..=1 (read_committed), its marker at 2.
    p.archive_aborted(0, 1);
    assert_eq!(p.start_offset(), 2, "archived offsets leave the window");
    assert_eq!(p.fetch_offset(), 2);
    assert_eq!(p.acquire("a", &[2, 3], 10, 0), vec![range(2, 3, 1)]);
    // Past an acquired record, an aborted batch after a gap: the gap is
    // archived too, the acquired record keeps its lock.
    p.archive_aborted(6, 7);
    assert_eq!(p.end_offset(), 8);
    assert!(matches!(
        p.state(2),
        Some((RecordState::Acquired { .. }, 1))
    ));
    assert!(matches!(p.state(4), Some((RecordState::Archived, 0))));
    assert!(matches!(p.state(7), Some((RecordState::Archived, 0))));
    assert_eq!(p.fetch_offset(), 8);
}

fn dlq_sp() -> SharePartition {
    SharePartition::new(
        0,
        ShareConfig {
            lock_duration_ms: 1000,
            delivery_count_limit: 2,
            max_record_locks: 100,
            dead_letter: true,
        },
    )
}

#[test]
fn rejected_records_are_archiving_until_dead_lettered() {
    let mut p = dlq_sp();
    p.acquire("a", &offsets(0, 4), 10, 0);
    p.acknowledge("a", 0, 1, AckType::Reject, 1).unwrap();
    p.acknowledge("a", 2, 2, AckType::Gap, 1).unwrap();
    p.acknowledge("a", 3, 3, AckType::Accept, 1).unwrap();
    assert_eq!(p.state(0), Some((RecordState::Archiving, 1)));
    assert_eq!(p.start_offset(), 0, "ARCHIVING holds the SPSO");
    let (_, batches) = p.snapshot();
    assert_eq!(batches[0].state, 3, "persisted as ARCHIVING: {batches:?}");
    assert_eq!(
        p.take_dead_letters(),
        vec![DeadLetterRun {
            first: 0,
            last: 1,
            delivery_count: 1,
            cause: DeadLetterCause::Rejected
        }]
    );
    assert!(p.take_dead_letters().is_empty(), "handed out once");
    assert!(p.dead_lettered(0, 1));
    assert_eq!(p.start_offset(), 4);
}

#[test]
fn the_delivery_limit_dead_letters_by_release_and_expiry() {
    let mut p = dlq_sp();
    p.acquire("a", &offsets(0, 2), 10, 0);
    p.acknowledge("a", 0, 1, AckType::Release, 1).unwrap();
    p.acquire("a", &offsets(0, 2), 10, 2);
    p.acknowledge("a", 0, 0, AckType::Release, 3).unwrap();
    assert_eq!(p.expire(10_000), 1);
    assert_eq!(
        p.take_dead_letters(),
        vec![DeadLetterRun {
            first: 0,
            last: 1,
            delivery_count: 2,
            cause: DeadLetterCause::DeliveryCountExceeded
        }]
    );
    p.dead_lettered(0, 1);
    assert_eq!(p.start_offset(), 2);
}

#[test]
fn archiving_resumes_on_load_with_the_cause_from_the_count() {
    let batches = vec![
        StateBatch {
            first: 5,
            last: 6,
            state: 3,
            delivery_count: 1,
        },
        StateBatch {
            first: 7,
            last: 7,
            state: 3,
            delivery_count: 2,
        },
    ];
    let cfg = ShareConfig {
        delivery_count_limit: 2,
        dead_letter: true,
        ..ShareConfig::default()
    };
    let mut p = SharePartition::from_snapshot(5, &batches, cfg);
    assert_eq!(p.start_offset(), 5);
    let runs = p.take_dead_letters();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0].cause, DeadLetterCause::Rejected);
    assert_eq!(runs[1].cause, DeadLetterCause::DeliveryCountExceeded);
    p.dead_lettered(5, 7);
    assert_eq!(p.start_offset(), 8);
}

#[test]
fn without_a_dead_letter_queue_records_are_archived_at_once() {
    let mut p = sp();
    p.acquire("a", &offsets(0, 2), 10, 0);
    p.acknowledge("a", 0, 1, AckType::Reject, 1).unwrap();
    assert!(p.take_dead_letters().is_empty());
    assert_eq!(p.start_offset(), 2);
}
