//! The share coordinator's decisions, on the cases probed on Kafka 4.4.

use super::*;

fn b(first: i64, last: i64, state: i8, delivery_count: i16) -> StateBatch {
    StateBatch {
        first,
        last,
        state,
        delivery_count,
    }
}

fn key() -> StateKey {
    ("g".to_string(), Uuid::from_u128(7), 0)
}

fn write(se: i32, le: i32, start: i64, batches: Vec<StateBatch>) -> WriteRequest {
    WriteRequest {
        state_epoch: se,
        leader_epoch: le,
        start_offset: start,
        delivery_complete_count: -1,
        batches,
    }
}

fn apply(
    s: &mut ShareStates,
    decide: impl FnOnce(&ShareStates) -> Result<ShareStateRecord, ShareStateError>,
) {
    match decide(s) {
        Ok(r) => s.apply(&r),
        Err(e) => panic!("refused: {e}"),
    }
}

#[test]
fn merge_overlays_later_runs_cuts_below_the_start_and_joins_equal_neighbours() {
    let cur = vec![b(5, 9, 0, 1), b(10, 12, 2, 1)];
    assert_eq!(
        merge_batches(&cur, &[b(7, 8, 4, 2)], -1),
        vec![b(5, 6, 0, 1), b(7, 8, 4, 2), b(9, 9, 0, 1), b(10, 12, 2, 1)]
    );
    let cur = merge_batches(&cur, &[b(7, 8, 4, 2)], -1);
    assert_eq!(
        merge_batches(&cur, &[b(11, 11, 0, 2)], 8),
        vec![
            b(8, 8, 4, 2),
            b(9, 9, 0, 1),
            b(10, 10, 2, 1),
            b(11, 11, 0, 2),
            b(12, 12, 2, 1)
        ]
    );
    // Within one request the later run wins; equal neighbours join.
    assert_eq!(
        merge_batches(
            &[b(7, 7, 2, 1)],
            &[b(10, 11, 2, 1), b(12, 14, 2, 1), b(13, 20, 0, 3)],
            -1
        ),
        vec![b(7, 7, 2, 1), b(10, 12, 2, 1), b(13, 20, 0, 3)]
    );
    // A run covering others replaces them whole; runs before the start go.
    assert_eq!(
        merge_batches(
            &[b(1, 2, 0, 1), b(3, 4, 2, 1), b(6, 9, 4, 5)],
            &[b(2, 8, 2, 2)],
            3
        ),
        vec![b(3, 8, 2, 2), b(9, 9, 4, 5)]
    );
    assert_eq!(
        merge_batches(&[b(1, 2, 0, 1)], &[b(5, 4, 2, 1)], 10),
        vec![]
    );
}

/// A read: its answer as (state epoch, start offset, runs), the record it
/// writes applied.
fn read(
    s: &mut ShareStates,
    k: &StateKey,
    le: i32,
) -> Result<(i32, i64, Vec<StateBatch>), ShareStateError> {
    let (a, record) = s.read(k, le, 500, 1)?;
    if let Some(r) = record {
        s.apply(&r);
    }
    Ok((a.state_epoch, a.start_offset, a.batches))
}

/// The leader epoch a record carries.
fn leader_epoch_of(r: &ShareStateRecord) -> Option<i32> {
    match r {
        ShareStateRecord::Snapshot { value, .. } => value.as_ref().map(|v| v.leader_epoch),
        ShareStateRecord::Update { value, .. } => value.as_ref().map(|v| v.leader_epoch),
    }
}

#[test]
fn initialize_read_write_summary_delete_as_kafka_answers() {
    let mut s = ShareStates::default();
    let k = key();
    assert_eq!(read(&mut s, &k, 0), Err(ShareStateError::ReadUninitialized));
    assert_eq!(s.summary(&k, true), Ok((0, 0, -1)));
    assert_eq!(
        s.summary(&k, false),
        Err(ShareStateError::UnknownTopicOrPartition)
    );
    assert_eq!(
        s.delete(&k, false),
        Err(ShareStateError::UnknownTopicOrPartition)
    );
    assert_eq!(
        s.write(&k, &write(0, 0, 0, vec![]), 500, 1),
        Err(ShareStateError::WriteUninitialized)
    );
    assert_eq!(
        s.initialize(&k, 0, 0, false, 1),
        Err(ShareStateError::UnknownTopicOrPartition)
    );
    apply(&mut s, |s| s.initialize(&k, 1, 5, true, 1));
    assert_eq!(
        s.initialize(&k, 0, 7, true, 1),
        Err(ShareStateError::FencedStateEpoch)
    );
    // A read at the state's epoch writes nothing; a newer one is written.
    assert_eq!(s.read(&k, 0, 500, 1).map(|(_, r)| r), Ok(None));
    let (_, record) = s.read(&k, 3, 500, 1).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(record.as_ref().and_then(leader_epoch_of), Some(3));
    assert_eq!(read(&mut s, &k, 3), Ok((1, 5, vec![])));
    assert_eq!(read(&mut s, &k, 2), Err(ShareStateError::FencedLeaderEpoch));
    assert_eq!(
        read(&mut s, &k, -1),
        Err(ShareStateError::NegativeLeaderEpoch)
    );
    assert_eq!(
        s.write(&k, &write(0, 3, 5, vec![]), 500, 1),
        Err(ShareStateError::FencedStateEpoch)
    );
    assert_eq!(
        s.write(&k, &write(1, 2, 5, vec![]), 500, 1),
        Err(ShareStateError::FencedLeaderEpoch)
    );
    apply(&mut s, |s| {
        s.write(
            &k,
            &write(1, 3, 5, vec![b(5, 9, 0, 1), b(10, 12, 2, 1)]),
            500,
            1,
        )
    });
    apply(&mut s, |s| {
        s.write(&k, &write(1, 3, -1, vec![b(7, 8, 4, 2)]), 500, 1)
    });
    // A write carries the state's leader epoch (3), not its own (4): a read
    // at 3 is not fenced after it, as on Kafka 4.4.
    let w = s.write(&k, &write(1, 4, 8, vec![b(11, 11, 0, 2)]), 500, 1);
    assert_eq!(w.as_ref().ok().and_then(leader_epoch_of), Some(3));
    apply(&mut s, |_| w.clone());
    let merged = vec![
        b(8, 8, 4, 2),
        b(9, 9, 0, 1),
        b(10, 10, 2, 1),
        b(11, 11, 0, 2),
        b(12, 12, 2, 1),
    ];
    assert_eq!(read(&mut s, &k, 3), Ok((1, 8, merged)));
    assert_eq!(s.summary(&k, true), Ok((1, 3, 8)));
    let tombstones = s.delete(&k, true).unwrap_or_default();
    assert_eq!(tombstones.len(), 1);
    for t in &tombstones {
        s.apply(t);
    }
    assert_eq!(read(&mut s, &k, 4), Err(ShareStateError::ReadUninitialized));
    assert_eq!(s.delete(&k, true), Ok(vec![]));
    apply(&mut s, |s| s.initialize(&k, 0, 0, true, 1));
    assert_eq!(read(&mut s, &k, 0).map(|r| r.0), Ok(0));
}

#[test]
fn a_snapshot_follows_per_snapshot_updates_and_replays_to_the_same_state() {
    let mut s = ShareStates::default();
    let k = key();
    let mut log = Vec::new();
    let mut step =
        |s: &mut ShareStates,
         decide: &dyn Fn(&ShareStates) -> Result<ShareStateRecord, ShareStateError>| {
            let r = decide(s).unwrap_or_else(|e| panic!("{e}"));
            s.apply(&r);
            log.push(r);
        };
    step(&mut s, &|s| s.initialize(&k, 0, 0, true, 1));
    for i in 0..5 {
        step(&mut s, &|s| {
            s.write(&k, &write(0, 1, -1, vec![b(i, i, 2, 1)]), 3, 2)
        });
    }
    let kinds: Vec<&str> = log
        .iter()
        .map(|r| match r {
            ShareStateRecord::Snapshot { .. } => "S",
            ShareStateRecord::Update { .. } => "U",
        })
        .collect();
    assert_eq!(kinds, ["S", "U", "U", "U", "S", "U"]);
    assert_eq!(s.get(&k).map(|s| s.snapshot_epoch), Some(1));
    assert_eq!(
        s.get(&k).map(|s| s.batches.clone()),
        Some(vec![b(0, 4, 2, 1)])
    );
    let mut replayed = ShareStates::default();
    for r in &log {
        replayed.apply(r);
    }
    assert_eq!(
        replayed
            .get(&k)
            .map(|s| (s.start_offset, s.batches.clone())),
        s.get(&k).map(|s| (s.start_offset, s.batches.clone()))
    );
}

#[test]
fn coordinator_keys_parse_as_kafka_accepts_them() {
    let id = Uuid::from_u128(0x2342_a6ec_4fd6_4452_a8e7_82f1_1248_7f04);
    let k = coordinator_key("g1", id, 0);
    assert_eq!(k, "g1:I0Km7E_WRFKo54LxEkh_BA:0");
    assert_eq!(parse_coordinator_key(&k), Some(("g1".to_string(), id, 0)));
    assert!(parse_coordinator_key("g1:I0Km7E_WRFKo54LxEkh_BA:-1").is_some());
    let colon = parse_coordinator_key("a:b:I0Km7E_WRFKo54LxEkh_BA:0");
    assert_eq!(colon.map(|k| k.0), Some("a:b".to_string()));
    for bad in [
        "g1",
        "g1:abc:0",
        "g1:I0Km7E_WRFKo54LxEkh_BA:x",
        "g1:I0Km7E_WRFKo54LxEkh_BA",
        ":I0Km7E_WRFKo54LxEkh_BA:0",
    ] {
        assert_eq!(parse_coordinator_key(bad), None, "{bad}");
    }
}
