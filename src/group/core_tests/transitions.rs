//! Transitions of the classic group state machine, deadlines, static
//! membership, offsets and load.

use bytes::Bytes;

use super::*;
use crate::error::{group_code, KafkaCode};
use crate::group::error::GroupError;
use crate::group::records::{GroupValue, OffsetsRecord, StoredMember};
use crate::group::state::GroupState;
use crate::group::*;

#[test]
fn invalid_session_timeout_is_refused() {
    let mut h = Harness::new(0);
    let mut a = join_args("", "c", None);
    a.session_timeout_ms = 10;
    let j = h.join(a);
    assert!(matches!(
        h.join_reply(j).and_then(|r| r.error),
        Some(GroupError::InvalidSessionTimeout {
            session_timeout_ms: 10,
            ..
        })
    ));
}

#[test]
fn initial_rebalance_delay_holds_the_first_join() {
    let mut h = Harness::new(DELAY_MS);
    let j = h.join(join_args("", "a", None));
    assert_eq!(h.state(), GroupState::PreparingRebalance);
    h.advance(i64::from(DELAY_MS) - 1);
    assert!(h.join_reply(j).is_none(), "still within the initial delay");
    h.advance(1);
    let r = h.join_reply(j).expect("joined at the delay");
    assert_eq!((r.error, r.generation_id), (None, 1));
    assert_eq!(h.state(), GroupState::CompletingRebalance);
}

#[test]
fn without_delay_a_lone_member_joins_at_once() {
    let mut h = Harness::new(0);
    let j = h.join(join_args("", "a", None));
    let r = h.join_reply(j).expect("joined");
    assert_eq!(r.leader, r.member_id);
    assert_eq!(r.members.len(), 1, "the leader gets the member list");
}

#[test]
fn member_id_required_then_join_with_it_and_pending_id_lapses() {
    let mut h = Harness::new(0);
    let mut a = join_args("", "a", None);
    a.require_known_member_id = true;
    let j = h.join(a.clone());
    let Some(GroupError::MemberIdRequired { member_id }) = h.join_reply(j).and_then(|r| r.error)
    else {
        panic!("MEMBER_ID_REQUIRED expected");
    };
    a.member_id = member_id.clone();
    let j = h.join(a.clone());
    assert_eq!(h.join_reply(j).map(|r| r.member_id), Some(member_id));
    // A second id handed out lapses after one session timeout.
    let mut b = join_args("", "b", None);
    b.require_known_member_id = true;
    let j = h.join(b.clone());
    let Some(GroupError::MemberIdRequired { member_id }) = h.join_reply(j).and_then(|r| r.error)
    else {
        panic!("MEMBER_ID_REQUIRED expected");
    };
    h.advance(i64::from(SESSION_MS));
    b.member_id = member_id;
    let j = h.join(b);
    assert_eq!(
        h.join_reply(j).and_then(|r| r.error).map(|e| e.code()),
        Some(25)
    );
}

#[test]
fn group_max_size_is_enforced() {
    let mut h = Harness::new(0);
    h.cfg.max_size = 1;
    h.join(join_args("", "a", None));
    let j = h.join(join_args("", "b", None));
    assert_eq!(
        h.join_reply(j).and_then(|r| r.error),
        Some(GroupError::GroupMaxSizeReached { max_size: 1 })
    );
}

#[test]
fn inconsistent_protocol_is_refused() {
    let mut f = fixture(GroupState::Stable);
    let mut a = join_args("", "x", None);
    a.protocols = vec![("roundrobin".into(), sub(&["t"]))];
    assert_eq!(join_out(&mut f, a), Code(23));
    let mut a = join_args("", "x", None);
    a.protocol_type = "connect".into();
    assert_eq!(join_out(&mut f, a), Code(23));
    let mut s = sync_args(&f.leader, f.generation, vec![]);
    s.protocol_name = Some("roundrobin".into());
    let h = f.h.sync(s);
    assert_eq!(
        f.h.sync_reply(h).and_then(|r| r.error),
        Some(GroupError::InconsistentGroupProtocol)
    );
}

#[test]
fn session_expiry_removes_a_silent_member_and_rebalances() {
    let mut f = fixture(GroupState::Stable);
    // The leader heartbeats; the follower stays silent.
    for _ in 0..3 {
        f.h.advance(i64::from(SESSION_MS) / 4);
        let (l, g) = (f.leader.clone(), f.generation);
        assert_eq!(f.h.core.heartbeat(G, g, &l, &None, f.h.now), Ok(()));
    }
    assert_eq!(f.h.state(), GroupState::Stable);
    f.h.advance(i64::from(SESSION_MS) / 4);
    assert_eq!(f.h.state(), GroupState::PreparingRebalance);
    let group = &f.h.core.groups[G];
    assert!(!group.members.contains_key(&f.follower));
    assert!(group.members.contains_key(&f.leader));
    let (l, g) = (f.leader.clone(), f.generation);
    assert_eq!(
        f.h.core.heartbeat(G, g, &l, &None, f.h.now),
        Err(GroupError::RebalanceInProgress)
    );
    // The leader rejoins: generation 2 with the leader alone.
    let j = f.h.join(join_args(&l, "a", None));
    let r = f.h.join_reply(j).expect("joined");
    assert_eq!((r.generation_id, r.members.len()), (g + 1, 1));
}

#[test]
fn rebalance_timeout_drops_members_that_do_not_rejoin() {
    let mut f = fixture(GroupState::Stable);
    let j = f.h.join(join_args("", "c", None));
    let l = f.leader.clone();
    let jl = f.h.join(join_args(&l, "a", None));
    // The follower keeps heartbeating (REBALANCE_IN_PROGRESS) but never
    // rejoins.
    let (fol, g) = (f.follower.clone(), f.generation);
    for _ in 0..3 {
        f.h.advance(5_000);
        assert_eq!(
            f.h.core.heartbeat(G, g, &fol, &None, f.h.now),
            Err(GroupError::RebalanceInProgress)
        );
    }
    f.h.advance(i64::from(REBALANCE_MS) - 15_001);
    assert!(f.h.join_reply(jl).is_none());
    assert_eq!(f.h.state(), GroupState::PreparingRebalance);
    f.h.advance(1);
    let r =
        f.h.join_reply(jl)
            .expect("join completed at the rebalance timeout");
    assert_eq!(r.generation_id, f.generation + 1);
    assert!(f.h.join_reply(j).is_some());
    assert!(!f.h.core.groups[G].members.contains_key(&f.follower));
    assert_eq!(f.h.state(), GroupState::CompletingRebalance);
}

#[test]
fn rebalance_cancels_parked_syncs_and_failed_store_rebalances() {
    let mut f = fixture(GroupState::CompletingRebalance);
    let fol = f.follower.clone();
    let s = f.h.sync(sync_args(&fol, f.generation, vec![]));
    assert!(f.h.sync_reply(s).is_none());
    f.h.join(join_args("", "c", None));
    assert_eq!(
        f.h.sync_reply(s).and_then(|r| r.error),
        Some(GroupError::RebalanceInProgress)
    );

    let mut f = fixture(GroupState::CompletingRebalance);
    let (l, fol) = (f.leader.clone(), f.follower.clone());
    let sf = f.h.sync(sync_args(&fol, f.generation, vec![]));
    let sl = f.h.sync(sync_args(
        &l,
        f.generation,
        vec![(fol.clone(), Bytes::from_static(b"B"))],
    ));
    f.h.store(Err(GroupError::Append(
        crate::shard::error::AppendFailure::Storage,
    )));
    for h in [sf, sl] {
        assert_eq!(
            f.h.sync_reply(h).and_then(|r| r.error).map(|e| e.code()),
            Some(56)
        );
    }
    assert_eq!(f.h.state(), GroupState::PreparingRebalance);
}

#[test]
fn leave_of_the_last_members_empties_the_group_and_persists_it() {
    let f = fixture(GroupState::Empty);
    assert_eq!(f.h.generation(), f.generation + 1);
    assert!(f.h.core.groups[G].members.is_empty());
    let mut f = fixture(GroupState::Stable);
    let members = vec![
        LeavingMember {
            member_id: f.leader.clone(),
            group_instance_id: None,
        },
        LeavingMember {
            member_id: f.follower.clone(),
            group_instance_id: None,
        },
    ];
    f.h.core.leave(&f.h.cfg, G, members, f.h.now);
    f.h.collect();
    assert_eq!(f.h.persisted(), 1);
}

#[test]
fn static_member_rejoins_without_rebalance_and_fences_its_old_id() {
    let mut h = Harness::new(0);
    let j = h.join(join_args("", "a", Some("i-a")));
    let old = h.join_reply(j).expect("joined").member_id;
    let mut sa = sync_args(&old, 1, vec![(old.clone(), Bytes::from_static(b"A"))]);
    sa.group_instance_id = Some("i-a".into());
    let s = h.sync(sa);
    h.store(Ok(()));
    assert_eq!(h.sync_reply(s).and_then(|r| r.error), None);
    assert_eq!(h.state(), GroupState::Stable);
    // Restarted with the same instance id: same generation, old assignment
    // kept, no rebalance; the leader may skip the assignment (KIP-814).
    let j = h.join(join_args("", "a", Some("i-a")));
    let r = h.join_reply(j).expect("answered at once");
    assert_ne!(r.member_id, old);
    assert_eq!((r.generation_id, r.skip_assignment), (1, true));
    assert_eq!(h.state(), GroupState::Stable);
    assert_eq!(h.persisted(), 1, "the new member id is persisted");
    assert_eq!(
        h.core.groups[G].members[&r.member_id].assignment,
        Bytes::from_static(b"A")
    );
    // The old id is fenced.
    let inst = Some("i-a".to_string());
    assert_eq!(
        h.core.heartbeat(G, 1, &old, &inst, h.now),
        Err(GroupError::FencedInstanceId {
            group_instance_id: inst.clone()
        })
    );
    let o = h.core.leave(
        &h.cfg,
        G,
        vec![LeavingMember {
            member_id: old,
            group_instance_id: inst.clone(),
        }],
        h.now,
    );
    assert_eq!(group_code(&o.members[0].1), 82);
    // Leaving by instance id alone removes the current member.
    let o = h.core.leave(
        &h.cfg,
        G,
        vec![LeavingMember {
            member_id: String::new(),
            group_instance_id: inst,
        }],
        h.now,
    );
    assert_eq!(o.members[0].1, Ok(()));
}

#[test]
fn static_rejoin_fences_the_parked_join_of_the_old_id() {
    let mut f = fixture(GroupState::Stable);
    // A static member joins (rebalance), and restarts while its join waits.
    let j1 = f.h.join(join_args("", "s", Some("i-s")));
    assert!(f.h.join_reply(j1).is_none());
    let j2 = f.h.join(join_args("", "s", Some("i-s")));
    assert!(matches!(
        f.h.join_reply(j1).and_then(|r| r.error),
        Some(GroupError::FencedInstanceId { .. })
    ));
    assert!(
        f.h.join_reply(j2).is_none(),
        "the new id waits in the rebalance"
    );
}

#[test]
fn a_second_join_of_a_member_replaces_its_parked_one() {
    let mut f = fixture(GroupState::PreparingRebalance);
    let l = f.leader.clone();
    let j1 = f.h.join(join_args(&l, "a", None));
    let j2 = f.h.join(join_args(&l, "a", None));
    assert_eq!(
        f.h.join_reply(j1).and_then(|r| r.error).map(|e| e.code()),
        Some(25)
    );
    assert!(f.h.join_reply(j2).is_none());
}

#[test]
fn offsets_commit_fetch_and_metadata_limit() {
    let mut f = fixture(GroupState::Stable);
    let (m, g) = (f.follower.clone(), f.generation);
    let mut big = part("t", 1, 9);
    big.metadata = Some("x".repeat(5));
    let mut routed = part("nope", 0, 1);
    routed.error = Some(GroupError::UnknownTopicOrPartition {
        topic: "nope".into(),
        partition: 0,
    });
    let plan = f.h.core.plan_commit(
        4,
        G,
        g,
        &m,
        &None,
        &[part("t", 0, 5), big, routed],
        None,
        UnknownGroup::IllegalGeneration,
        f.h.now,
    );
    let codes: Vec<i16> = plan.results.iter().map(group_code).collect();
    assert_eq!(codes, vec![0, 12, 3]);
    assert_eq!(plan.records.len(), 1);
    let failed = CommitPlanProbe::failed_codes(&plan);
    assert_eq!(failed, vec![56, 12, 3]);
    f.h.core.apply_commit(G, plan.accepted);
    let got = f.h.core.fetch_offsets(G, None, false);
    assert_eq!((got.len(), got[0].offset), (1, 5));
    let got =
        f.h.core
            .fetch_offsets(G, Some(vec![("t".into(), 3)]), false);
    assert_eq!((got[0].offset, got[0].leader_epoch), (-1, -1));
}

/// The codes a plan would give if its append failed with KAFKA_STORAGE_ERROR.
struct CommitPlanProbe;
impl CommitPlanProbe {
    fn failed_codes(plan: &offsets::CommitPlan) -> Vec<i16> {
        let copy = offsets::CommitPlan {
            results: plan.results.clone(),
            ..Default::default()
        };
        copy.failed(&GroupError::Append(
            crate::shard::error::AppendFailure::Storage,
        ))
        .iter()
        .map(group_code)
        .collect()
    }
}

#[test]
fn transactional_offsets_wait_for_the_marker() {
    let mut h = Harness::new(0);
    let p = records::partition_for_group(G, 50);
    let plan = h.core.plan_commit(
        4096,
        G,
        -1,
        "",
        &None,
        &[part("t", 0, 7)],
        Some(9),
        UnknownGroup::IllegalGeneration,
        h.now,
    );
    assert_eq!(plan.results, vec![Ok(())]);
    let got = h.core.fetch_offsets(G, Some(vec![("t".into(), 0)]), true);
    assert_eq!(
        (got[0].offset, got[0].error.clone()),
        (-1, Some(GroupError::UnstableOffsetCommit))
    );
    // A marker on another partition does nothing; the COMMIT marker here
    // makes them committed.
    h.core.complete_txn(9, (p + 1) % 50, 50, true, h.now);
    assert_eq!(h.core.fetch_offsets(G, None, false).len(), 0);
    h.core.complete_txn(9, p, 50, true, h.now);
    let got = h.core.fetch_offsets(G, Some(vec![("t".into(), 0)]), true);
    assert_eq!((got[0].offset, got[0].error.clone()), (7, None));
    // An aborted transaction's offsets are dropped; a plain commit after a
    // transactional one wins over it.
    h.core.plan_commit(
        4096,
        G,
        -1,
        "",
        &None,
        &[part("t", 0, 8)],
        Some(10),
        UnknownGroup::IllegalGeneration,
        h.now,
    );
    h.core.complete_txn(10, p, 50, false, h.now);
    assert_eq!(h.core.fetch_offsets(G, None, false)[0].offset, 7);
    h.core.plan_commit(
        4096,
        G,
        -1,
        "",
        &None,
        &[part("t", 0, 20)],
        Some(11),
        UnknownGroup::IllegalGeneration,
        h.now,
    );
    let plain = commit_one(&mut h, -1, "", 30, UnknownGroup::IllegalGeneration);
    h.core.apply_commit(G, plain.accepted);
    h.core.complete_txn(11, p, 50, true, h.now);
    assert_eq!(h.core.fetch_offsets(G, None, false)[0].offset, 30);
}

/// TxnOffsetCommit's producer checks against the group's
/// `__consumer_offsets` partition: an older epoch than the partition's is
/// fenced (and leaves the verification in place), then the verification
/// must still be there.
#[test]
fn txn_commit_checks_the_producer_epoch_then_the_verification() {
    use crate::group::offsets::check_txn_producer;
    let producer = (9, 3);
    let taken = std::cell::Cell::new(0);
    let rows = [
        (None, true, Ok(()), 1),
        (Some(3), true, Ok(()), 1),
        (Some(2), true, Ok(()), 1),
        (
            Some(4),
            true,
            Err(GroupError::ProducerFenced {
                producer_id: 9,
                producer_epoch: 3,
            }),
            0,
        ),
        (
            None,
            false,
            Err(GroupError::InvalidTxnState { producer_id: 9 }),
            1,
        ),
        (
            Some(3),
            false,
            Err(GroupError::InvalidTxnState { producer_id: 9 }),
            1,
        ),
    ];
    for (known, verified, want, takes) in rows {
        taken.set(0);
        let got = check_txn_producer(producer, known, || {
            taken.set(taken.get() + 1);
            verified
        });
        assert_eq!(got, want, "known epoch {known:?}, verified {verified}");
        assert_eq!(
            taken.get(),
            takes,
            "known epoch {known:?}, verified {verified}"
        );
    }
    let codes: Vec<i16> = [
        check_txn_producer(producer, Some(4), || true),
        check_txn_producer(producer, None, || false),
    ]
    .iter()
    .map(group_code)
    .collect();
    assert_eq!(codes, [90, 48]);
}

/// A parked JoinGroup or SyncGroup whose answer can no longer come is
/// answered UNKNOWN_MEMBER_ID or REBALANCE_IN_PROGRESS: the member joins
/// again.
#[test]
fn unanswered_parked_requests_make_the_member_rejoin() {
    let join = GroupCore::unanswered_join(&join_args("m-1", "a", None));
    assert_eq!(
        (join.error.map(|e| e.code()), join.member_id.as_str()),
        (Some(25), "m-1")
    );
    assert_eq!(join.generation_id, -1);
    let sync = GroupCore::unanswered_sync();
    assert_eq!(sync.error.map(|e| e.code()), Some(27));
    assert!(sync.assignment.is_empty());
}

#[test]
fn offsets_expire_after_retention_for_empty_groups() {
    let mut f = fixture(GroupState::Empty);
    let plan = commit_one(&mut f.h, -1, "", 1, UnknownGroup::IllegalGeneration);
    f.h.core.apply_commit(G, plan.accepted);
    let retention = 1_000;
    assert!(f.h.core.plan_expiry(retention, f.h.now).is_empty());
    let exp = f.h.core.plan_expiry(retention, f.h.now + retention);
    assert_eq!(exp.len(), 1);
    assert!(exp[0].whole_group);
    assert_eq!(exp[0].records().len(), 2, "offset and group tombstones");
    f.h.core.apply_expiry(&exp[0]);
    assert!(!f.h.core.groups.contains_key(G));
    // Stable groups keep their offsets.
    let mut f = fixture(GroupState::Stable);
    let (m, g) = (f.follower.clone(), f.generation);
    let plan = commit_one(&mut f.h, g, &m, 1, UnknownGroup::IllegalGeneration);
    f.h.core.apply_commit(G, plan.accepted);
    assert!(f.h.core.plan_expiry(1, f.h.now + 1_000_000).is_empty());
}

#[test]
fn delete_group_removes_group_and_offsets() {
    let mut f = fixture(GroupState::Empty);
    let plan = commit_one(&mut f.h, -1, "", 1, UnknownGroup::IllegalGeneration);
    f.h.core.apply_commit(G, plan.accepted);
    let recs =
        f.h.core
            .plan_delete_group(G)
            .expect("Empty group is deletable");
    assert_eq!(recs.len(), 2);
    assert!(recs.iter().all(|(_, v)| v.is_none()), "tombstones");
    f.h.core.apply_delete_group(G, f.h.now);
    assert!(f.h.core.fetch_offsets(G, None, false).is_empty());
    assert_eq!(f.h.core.describe(G).state, "Dead");
    assert!(f.h.core.list(&[], &[]).is_empty());
}

#[test]
fn list_filters_by_state_and_type() {
    let f = fixture(GroupState::Stable);
    assert_eq!(f.h.core.list(&["stable".into()], &[]).len(), 1);
    assert!(f.h.core.list(&["Empty".into()], &[]).is_empty());
    assert_eq!(f.h.core.list(&[], &["Classic".into()]).len(), 1);
    assert!(f.h.core.list(&[], &["consumer".into()]).is_empty());
    let d = f.h.core.describe(G);
    assert_eq!((d.protocol.as_str(), d.members.len()), ("range", 2));
    assert!(d.members.iter().all(|m| !m.assignment.is_empty()));
}

#[test]
fn loaded_group_is_stable_and_its_members_expire_without_heartbeats() {
    let mut h = Harness::new(0);
    let value = GroupValue {
        protocol_type: "consumer".into(),
        generation: 4,
        protocol: Some("range".into()),
        leader: Some("m1".into()),
        current_state_timestamp: 5,
        members: vec![StoredMember {
            member_id: "m1".into(),
            group_instance_id: Some("i1".into()),
            client_id: "c".into(),
            client_host: "/h".into(),
            rebalance_timeout_ms: REBALANCE_MS,
            session_timeout_ms: SESSION_MS,
            subscription: sub(&["t"]),
            assignment: Bytes::from_static(b"A"),
        }],
    };
    load::replay(
        &mut h.core,
        OffsetsRecord::Group {
            group: G.into(),
            value: Some(value),
        },
        h.now,
    );
    assert_eq!((h.state(), h.generation()), (GroupState::Stable, 4));
    // Only the loaded partition's groups are armed.
    let n = 50;
    let mine = crate::group::records::partition_for_group(G, n);
    h.core.arm_partition((mine + 1) % n, n, h.now);
    h.collect();
    assert_eq!(h.timers.len(), 0, "another partition's load arms nothing");
    h.core.arm_partition(mine, n, h.now);
    h.collect();
    assert_eq!(h.timers.len(), 1);
    h.advance(i64::from(SESSION_MS));
    // The member expired: the group rebalanced to Empty (generation 5).
    assert_eq!((h.state(), h.generation()), (GroupState::Empty, 5));
    load::replay(
        &mut h.core,
        OffsetsRecord::Group {
            group: G.into(),
            value: None,
        },
        h.now,
    );
    assert!(!h.core.groups.contains_key(G));
}

/// DeleteGroups marks the group Dead before its tombstones are appended: a
/// JoinGroup arriving meanwhile is answered COORDINATOR_NOT_AVAILABLE at
/// once (not parked in a group about to vanish); a failed append leaves the
/// group Empty.
#[test]
fn join_during_delete_is_answered_at_once() {
    let mut f = fixture(GroupState::Empty);
    let recs =
        f.h.core
            .begin_delete_group(G, f.h.now)
            .expect("Empty group is deletable");
    assert_eq!(recs.len(), 1, "the group tombstone");
    assert_eq!(f.h.state(), GroupState::Dead);
    assert_eq!(join_out(&mut f, join_args("", "late", None)), Code(15));
    f.h.core.abort_delete_group(G, f.h.now);
    assert_eq!(f.h.state(), GroupState::Empty);
    let recs =
        f.h.core
            .begin_delete_group(G, f.h.now)
            .expect("still deletable");
    assert_eq!(recs.len(), 1);
    f.h.core.apply_delete_group(G, f.h.now);
    assert!(f.h.core.list(&[], &[]).is_empty());
}

/// A group removed with requests parked in it answers them first: no
/// JoinGroup or SyncGroup is left waiting for a group that is gone.
#[test]
fn removing_a_group_answers_its_parked_requests() {
    let mut f = fixture(GroupState::CompletingRebalance);
    let generation = f.generation;
    let parked_sync = f.h.sync(sync_args(&f.follower, generation, vec![]));
    assert!(
        f.h.sync_reply(parked_sync).is_none(),
        "waits for the leader"
    );
    let mut f2 = fixture(GroupState::Stable);
    let parked_join = f2.h.join(join_args("", "c", None));
    assert!(
        f2.h.join_reply(parked_join).is_none(),
        "waits for the rebalance"
    );
    for (h, sync) in [(&mut f.h, Some(parked_sync)), (&mut f2.h, None)] {
        let now = h.now;
        h.core.apply_delete_group(G, now);
        h.collect();
        match sync {
            Some(s) => {
                let r = h.sync_reply(s).expect("parked SyncGroup answered");
                assert_eq!(r.error.map(|e| e.code()), Some(15));
            }
            None => {
                let r = h
                    .join_reply(parked_join)
                    .expect("parked JoinGroup answered");
                assert_eq!(r.error.map(|e| e.code()), Some(15));
            }
        }
        assert!(h.core.list(&[], &[]).is_empty());
    }
}

/// Offsets expire, but a member that joined while their tombstones were
/// appended keeps the group.
#[test]
fn expiry_keeps_a_group_joined_meanwhile() {
    let mut f = fixture(GroupState::Empty);
    let plan = commit_one(&mut f.h, -1, "", 1, UnknownGroup::IllegalGeneration);
    f.h.core.apply_commit(G, plan.accepted);
    let retention = 1_000;
    let exp = f.h.core.plan_expiry(retention, f.h.now + retention);
    assert!(exp[0].whole_group);
    let parked = f.h.join(join_args("", "late", None));
    assert_eq!(f.h.state(), GroupState::PreparingRebalance);
    f.h.core.apply_expiry(&exp[0]);
    assert!(f.h.core.fetch_offsets(G, None, false).is_empty());
    assert_eq!(f.h.state(), GroupState::PreparingRebalance, "group kept");
    f.h.advance(i64::from(DELAY_MS));
    let r = f.h.join_reply(parked).expect("the join completes");
    assert_eq!(r.error, None);
}

#[test]
fn member_ids_come_from_the_injected_source() {
    // The default source counts: ids are deterministic.
    let f = fixture(GroupState::Stable);
    assert_eq!((f.leader.as_str(), f.follower.as_str()), ("a-1", "b-2"));
    let mut h = Harness::new(0);
    h.core.member_ids = crate::group::state::MemberIdSource::new(|| "x".to_string());
    let mut a = join_args("", "c", None);
    a.require_known_member_id = true;
    let j = h.join(a);
    assert_eq!(
        h.join_reply(j).and_then(|r| r.error),
        Some(GroupError::MemberIdRequired {
            member_id: "c-x".into()
        })
    );
}
