use super::*;

fn key(topic: &str, partition: i32) -> SessionKey {
    SessionKey {
        topic: TopicRef::Name(Arc::from(topic)),
        partition,
    }
}

fn params(fetch_offset: i64) -> FetchParams {
    FetchParams {
        fetch_offset,
        partition_max_bytes: 1 << 20,
        current_leader_epoch: -1,
        last_fetched_epoch: -1,
        log_start_offset: -1,
    }
}

fn answer(hw: i64, records: bool) -> PartitionAnswer {
    PartitionAnswer {
        failed: false,
        has_records: records,
        must_send: false,
        high_watermark: hw,
        last_stable_offset: hw,
        log_start_offset: 0,
    }
}

fn keys(b: &Begun) -> Vec<(SessionKey, i64)> {
    b.partitions
        .iter()
        .map(|(k, p)| (k.clone(), p.fetch_offset))
        .collect()
}

/// A full request (epoch 0) on a fresh cache: a session of its partitions.
fn created(cache: &mut FetchSessionCache, parts: &[(&str, i32, i64)]) -> (i32, Begun) {
    let req = parts
        .iter()
        .map(|(t, p, o)| (key(t, *p), params(*o)))
        .collect();
    let b = cache.begin(0, 0, false, req, &[]).unwrap();
    let Mode::Full { session_id } = b.mode else {
        panic!("no session: {:?}", b.mode)
    };
    (session_id, b)
}

#[test]
fn full_request_creates_a_session_and_carries_everything() {
    let mut c = FetchSessionCache::new(1, 4, 10, 7);
    let (id, b) = created(&mut c, &[("a", 0, 5), ("a", 1, 0), ("b", 0, 3)]);
    assert!(id > 0 && id % 4 == 1, "{id} names shard 1 of 4");
    assert!(c.owns(id));
    assert_eq!(b.partitions.len(), 3);
    let answers: Vec<_> = b
        .partitions
        .iter()
        .map(|(k, _)| (k.clone(), answer(10, false)))
        .collect();
    assert_eq!(c.answered(b.mode, &answers), vec![true; 3]);
    assert_eq!(c.len(), 1);
}

#[test]
fn incremental_carries_only_changed_partitions() {
    let mut c = FetchSessionCache::new(0, 1, 10, 1);
    let (id, b) = created(&mut c, &[("a", 0, 5), ("a", 1, 0), ("b", 0, 3)]);
    let full: Vec<_> = b
        .partitions
        .iter()
        .map(|(k, _)| (k.clone(), answer(10, false)))
        .collect();
    c.answered(b.mode, &full);

    // Epoch 1 changes a-1's offset only; all three are read (a-0 and b-0
    // with the offsets of the full request).
    let b = c
        .begin(id, 1, false, vec![(key("a", 1), params(4))], &[])
        .unwrap();
    assert_eq!(b.mode, Mode::Incremental { session_id: id });
    assert_eq!(
        keys(&b),
        vec![(key("a", 0), 5), (key("a", 1), 4), (key("b", 0), 3)]
    );
    // a-0: nothing new; a-1: records; b-0: high watermark moved.
    let answers = vec![
        (key("a", 0), answer(10, false)),
        (key("a", 1), answer(10, true)),
        (key("b", 0), answer(11, false)),
    ];
    assert_eq!(c.answered(b.mode, &answers), vec![false, true, true]);
    // Answered partitions moved to the end, in session order.
    let b = c.begin(id, 2, false, vec![], &[]).unwrap();
    assert_eq!(
        keys(&b),
        vec![(key("a", 0), 5), (key("a", 1), 4), (key("b", 0), 3)]
            .into_iter()
            .collect::<Vec<_>>()
    );
    // Nothing changed: an empty answer.
    let same = vec![
        (key("a", 0), answer(10, false)),
        (key("a", 1), answer(10, false)),
        (key("b", 0), answer(11, false)),
    ];
    assert_eq!(c.answered(b.mode, &same), vec![false; 3]);
    // The log start offset and the LSO count as changes too.
    let b = c.begin(id, 3, false, vec![], &[]).unwrap();
    let mut lso = answer(10, false);
    lso.last_stable_offset = 9;
    let mut start = answer(11, false);
    start.log_start_offset = 2;
    let moved = vec![
        (key("a", 0), lso),
        (key("a", 1), answer(10, false)),
        (key("b", 0), start),
    ];
    assert_eq!(c.answered(b.mode, &moved), vec![true, false, true]);
}

#[test]
fn answered_partitions_rotate_to_the_end() {
    let mut c = FetchSessionCache::new(0, 1, 10, 1);
    let (id, b) = created(&mut c, &[("a", 0, 0), ("a", 1, 0), ("a", 2, 0)]);
    let full: Vec<_> = b
        .partitions
        .iter()
        .map(|(k, _)| (k.clone(), answer(0, false)))
        .collect();
    c.answered(b.mode, &full);
    let b = c.begin(id, 1, false, vec![], &[]).unwrap();
    let answers = vec![
        (key("a", 0), answer(0, true)),
        (key("a", 1), answer(0, false)),
        (key("a", 2), answer(0, false)),
    ];
    assert_eq!(c.answered(b.mode, &answers), vec![true, false, false]);
    let b = c.begin(id, 2, false, vec![], &[]).unwrap();
    let order: Vec<i32> = b.partitions.iter().map(|(k, _)| k.partition).collect();
    assert_eq!(order, vec![1, 2, 0]);
}

#[test]
fn errors_are_always_carried_and_resent_once_cleared() {
    let mut c = FetchSessionCache::new(0, 1, 10, 1);
    let (id, b) = created(&mut c, &[("a", 0, 0)]);
    c.answered(b.mode, &[(key("a", 0), answer(3, false))]);
    let b = c.begin(id, 1, false, vec![], &[]).unwrap();
    let mut failed = answer(-1, false);
    failed.failed = true;
    assert_eq!(c.answered(b.mode, &[(key("a", 0), failed)]), vec![true]);
    let b = c.begin(id, 2, false, vec![], &[]).unwrap();
    assert_eq!(c.answered(b.mode, &[(key("a", 0), failed)]), vec![true]);
    // Back to the values sent before the error: sent again.
    let b = c.begin(id, 3, false, vec![], &[]).unwrap();
    assert_eq!(
        c.answered(b.mode, &[(key("a", 0), answer(3, false))]),
        vec![true]
    );
    let b = c.begin(id, 4, false, vec![], &[]).unwrap();
    assert_eq!(
        c.answered(b.mode, &[(key("a", 0), answer(3, false))]),
        vec![false]
    );
    // A diverging epoch or a current leader is always carried.
    let b = c.begin(id, 5, false, vec![], &[]).unwrap();
    let mut must = answer(3, false);
    must.must_send = true;
    assert_eq!(c.answered(b.mode, &[(key("a", 0), must)]), vec![true]);
}

#[test]
fn forgotten_partitions_leave_the_session_and_new_ones_join() {
    let mut c = FetchSessionCache::new(0, 1, 10, 1);
    let (id, _) = created(&mut c, &[("a", 0, 5), ("a", 1, 0)]);
    let b = c
        .begin(id, 1, false, vec![(key("b", 0), params(7))], &[key("a", 0)])
        .unwrap();
    assert_eq!(keys(&b), vec![(key("a", 1), 0), (key("b", 0), 7)]);
    // Forgetting wins over a partition also named in the request (Kafka
    // applies the partitions first, then the forgotten ones).
    let b = c
        .begin(id, 2, false, vec![(key("a", 1), params(9))], &[key("a", 1)])
        .unwrap();
    assert_eq!(keys(&b), vec![(key("b", 0), 7)]);
}

#[test]
fn epochs_must_follow_and_unknown_ids_are_not_found() {
    let mut c = FetchSessionCache::new(0, 2, 10, 1);
    let (id, _) = created(&mut c, &[("a", 0, 0)]);
    assert_eq!(
        c.begin(id, 2, false, vec![], &[]).unwrap_err(),
        FetchSessionError::InvalidSessionEpoch {
            session_id: id,
            expected: 1,
            got: 2
        }
    );
    // A wrong epoch leaves the session as it was.
    assert!(c.begin(id, 1, false, vec![], &[]).is_ok());
    assert!(matches!(
        c.begin(id, 1, false, vec![], &[]),
        Err(FetchSessionError::InvalidSessionEpoch { expected: 2, .. })
    ));
    assert_eq!(
        c.begin(id + 2, 1, false, vec![], &[]).unwrap_err(),
        FetchSessionError::SessionIdNotFound(id + 2)
    );
    // An id of the other shard is not found here.
    assert!(!c.owns(id + 1));
    assert_eq!(
        c.begin(id + 1, 1, false, vec![], &[]).unwrap_err(),
        FetchSessionError::SessionIdNotFound(id + 1)
    );
    // Epoch > 0 with session id 0 names no session.
    assert_eq!(
        c.begin(0, 1, false, vec![], &[]).unwrap_err(),
        FetchSessionError::SessionIdNotFound(0)
    );
    // Topic ids used otherwise than at creation.
    assert_eq!(
        c.begin(id, 2, true, vec![], &[]).unwrap_err(),
        FetchSessionError::TopicIdUsage(id)
    );
}

#[test]
fn final_epoch_closes_and_is_sessionless_and_initial_replaces() {
    let mut c = FetchSessionCache::new(0, 1, 10, 1);
    let (id, _) = created(&mut c, &[("a", 0, 0)]);
    let b = c
        .begin(id, FINAL_EPOCH, false, vec![(key("a", 0), params(1))], &[])
        .unwrap();
    assert_eq!(b.mode, Mode::Sessionless);
    assert_eq!(b.mode.session_id(), 0);
    assert_eq!(b.partitions.len(), 1);
    assert!(c.is_empty());
    assert_eq!(
        c.begin(id, 1, false, vec![], &[]).unwrap_err(),
        FetchSessionError::SessionIdNotFound(id)
    );
    // Epoch 0 naming a session closes it and opens another.
    let (id, _) = created(&mut c, &[("a", 0, 0)]);
    let b = c.begin(id, 0, false, vec![], &[]).unwrap();
    let Mode::Full { session_id } = b.mode else {
        panic!("{:?}", b.mode)
    };
    assert_ne!(session_id, id);
    assert_eq!(c.len(), 1);
    // Plain sessionless requests touch nothing.
    let b = c.begin(0, FINAL_EPOCH, false, vec![], &[]).unwrap();
    assert_eq!(b.mode, Mode::Sessionless);
    assert_eq!(c.len(), 1);
}

#[test]
fn a_full_cache_evicts_the_least_recently_used_session() {
    let mut c = FetchSessionCache::new(0, 1, 2, 1);
    let (first, _) = created(&mut c, &[("a", 0, 0)]);
    let (second, _) = created(&mut c, &[("a", 1, 0)]);
    // Using the first makes the second the least recently used.
    c.begin(first, 1, false, vec![], &[]).unwrap();
    let (third, _) = created(&mut c, &[("a", 2, 0)]);
    assert_eq!(c.len(), 2);
    assert_eq!(
        c.begin(second, 1, false, vec![], &[]).unwrap_err(),
        FetchSessionError::SessionIdNotFound(second)
    );
    assert!(c.begin(first, 2, false, vec![], &[]).is_ok());
    assert!(c.begin(third, 1, false, vec![], &[]).is_ok());
}

#[test]
fn no_slots_means_sessionless_full_requests() {
    let mut c = FetchSessionCache::new(0, 1, 0, 1);
    let b = c
        .begin(0, INITIAL_EPOCH, false, vec![(key("a", 0), params(0))], &[])
        .unwrap();
    assert_eq!(b.mode, Mode::Sessionless);
    assert!(c.is_empty());
}

#[test]
fn an_evicted_session_answers_everything() {
    let mut c = FetchSessionCache::new(0, 1, 1, 1);
    let (id, _) = created(&mut c, &[("a", 0, 0)]);
    let b = c.begin(id, 1, false, vec![], &[]).unwrap();
    created(&mut c, &[("b", 0, 0)]);
    assert_eq!(
        c.answered(b.mode, &[(key("a", 0), answer(0, false))]),
        vec![true]
    );
}

#[test]
fn slots_split_over_shards_and_ids_name_their_shard() {
    assert_eq!(slots_per_shard(1000, 2), 500);
    assert_eq!(slots_per_shard(1000, 3), 334);
    assert_eq!(slots_per_shard(0, 4), 0);
    assert_eq!(slots_per_shard(5, 0), 5);
    // Ids wrap below i32::MAX and stay positive and on their shard.
    let mut c = FetchSessionCache::new(2, 3, 10, u32::MAX);
    for _ in 0..5 {
        let (id, _) = created(&mut c, &[("a", 0, 0)]);
        assert!(id > 0 && id % 3 == 2, "{id}");
    }
    assert_eq!(next_epoch(i32::MAX), 1);
    assert_eq!(next_epoch(1), 2);
}

#[test]
fn a_session_changed_during_a_long_poll_is_answered_by_key() {
    let mut c = FetchSessionCache::new(0, 1, 10, 1);
    let (id, b) = created(&mut c, &[("a", 0, 0), ("a", 1, 0)]);
    let full: Vec<_> = b
        .partitions
        .iter()
        .map(|(k, _)| (k.clone(), answer(1, false)))
        .collect();
    c.answered(b.mode, &full);
    let polling = c.begin(id, 1, false, vec![], &[]).unwrap();
    // The next epoch arrives first (a fetcher that gave up waiting) and
    // forgets a-0, adds b-0.
    c.begin(id, 2, false, vec![(key("b", 0), params(0))], &[key("a", 0)])
        .unwrap();
    let late = vec![
        (key("a", 0), answer(2, false)),
        (key("a", 1), answer(2, false)),
    ];
    // a-0 left the session: carried; a-1 moved: carried and recorded.
    assert_eq!(c.answered(polling.mode, &late), vec![true, true]);
    let b = c.begin(id, 3, false, vec![], &[]).unwrap();
    assert_eq!(keys(&b), vec![(key("b", 0), 0), (key("a", 1), 0)]);
    let now = vec![
        (key("b", 0), answer(0, false)),
        (key("a", 1), answer(2, false)),
    ];
    assert_eq!(c.answered(b.mode, &now), vec![true, false]);
}

#[test]
fn a_partition_named_twice_keeps_its_last_fields() {
    let mut c = FetchSessionCache::new(0, 1, 10, 1);
    let (id, b) = created(&mut c, &[("a", 0, 3), ("a", 0, 8)]);
    assert_eq!(b.partitions.len(), 2, "the request is read as sent");
    let b = c.begin(id, 1, false, vec![], &[]).unwrap();
    assert_eq!(keys(&b), vec![(key("a", 0), 8)]);
}
