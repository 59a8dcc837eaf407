//! The answer of every group state to every request.

use super::*;
use crate::error::{group_code, KafkaCode};
use crate::group::error::GroupError;
use crate::group::state::GroupState;
use crate::group::*;

/// The columns of the tables.
const STATES: [GroupState; 5] = [
    GroupState::Empty,
    GroupState::PreparingRebalance,
    GroupState::CompletingRebalance,
    GroupState::Stable,
    GroupState::Dead,
];

type Request = fn(&mut Fixture) -> Out;

/// Every request against every state, with Kafka's answer: the columns are
/// Empty, PreparingRebalance, CompletingRebalance, Stable, Dead.
#[test]
fn every_state_answers_every_request_as_kafka_does() {
    let table: &[(&str, Request, [Out; 5])] = &[
        (
            "JoinGroup v4 unknown member",
            |f| {
                let mut a = join_args("", "n", None);
                a.require_known_member_id = true;
                join_out(f, a)
            },
            [Code(79), Code(79), Code(79), Code(79), Code(15)],
        ),
        (
            "JoinGroup v3 unknown member",
            |f| join_out(f, join_args("", "n", None)),
            [Parked, Parked, Parked, Parked, Code(15)],
        ),
        (
            "JoinGroup new static member",
            |f| join_out(f, join_args("", "n", Some("i-new"))),
            [Parked, Parked, Parked, Parked, Code(15)],
        ),
        (
            "JoinGroup known leader, same metadata",
            |f| {
                let l = f.leader.clone();
                join_out(f, join_args(&l, "a", None))
            },
            [Code(25), Parked, Code(0), Parked, Code(15)],
        ),
        (
            "JoinGroup known follower, same metadata",
            |f| {
                let m = f.follower.clone();
                join_out(f, join_args(&m, "b", None))
            },
            [Code(25), Parked, Code(0), Code(0), Code(15)],
        ),
        (
            "JoinGroup known follower, new metadata",
            |f| {
                let m = f.follower.clone();
                let mut a = join_args(&m, "b", None);
                a.protocols = vec![("range".into(), sub(&["t", "u"]))];
                join_out(f, a)
            },
            [Code(25), Parked, Parked, Parked, Code(15)],
        ),
        (
            "JoinGroup unknown member id",
            |f| join_out(f, join_args("nobody", "n", None)),
            [Code(25), Code(25), Code(25), Code(25), Code(15)],
        ),
        (
            "SyncGroup leader",
            |f| {
                let l = f.leader.clone();
                sync_out(f, &l)
            },
            [Code(25), Code(27), Parked, Code(0), Code(15)],
        ),
        (
            "SyncGroup follower",
            |f| {
                let m = f.follower.clone();
                sync_out(f, &m)
            },
            [Code(25), Code(27), Parked, Code(0), Code(15)],
        ),
        (
            "SyncGroup unknown member",
            |f| sync_out(f, "nobody"),
            [Code(25), Code(25), Code(25), Code(25), Code(15)],
        ),
        (
            "Heartbeat member, current generation",
            |f| {
                let (m, g) = (f.follower.clone(), f.generation);
                Code(group_code(&f.h.core.heartbeat(G, g, &m, &None, f.h.now)))
            },
            [Code(25), Code(27), Code(0), Code(0), Code(15)],
        ),
        (
            "Heartbeat member, stale generation",
            |f| {
                let (m, g) = (f.follower.clone(), f.generation - 1);
                Code(group_code(&f.h.core.heartbeat(G, g, &m, &None, f.h.now)))
            },
            [Code(25), Code(22), Code(22), Code(22), Code(15)],
        ),
        (
            "LeaveGroup member",
            |f| {
                let m = LeavingMember {
                    member_id: f.follower.clone(),
                    group_instance_id: None,
                };
                let o = f.h.core.leave(&f.h.cfg, G, vec![m], f.h.now);
                match o.error {
                    Some(e) => Code(e.code()),
                    None => Code(group_code(&o.members[0].1)),
                }
            },
            [Code(25), Code(0), Code(0), Code(0), Code(15)],
        ),
        (
            "OffsetCommit generation -1, no member (simple)",
            |f| commit_out(f, -1, "", None),
            [Code(0), Code(25), Code(25), Code(25), Code(15)],
        ),
        (
            "OffsetCommit member, current generation",
            |f| {
                let (m, g) = (f.follower.clone(), f.generation);
                commit_out(f, g, &m, None)
            },
            [Code(25), Code(0), Code(27), Code(0), Code(15)],
        ),
        (
            "TxnOffsetCommit generation -1, no member",
            |f| commit_out(f, -1, "", Some(7)),
            [Code(0), Code(0), Code(0), Code(0), Code(15)],
        ),
        (
            "TxnOffsetCommit member, current generation",
            |f| {
                let (m, g) = (f.follower.clone(), f.generation);
                commit_out(f, g, &m, Some(7))
            },
            [Code(25), Code(0), Code(0), Code(0), Code(15)],
        ),
        (
            "OffsetFetch",
            |f| {
                let got = f.h.core.fetch_offsets(G, Some(vec![("t".into(), 0)]), true);
                Code(got[0].error.as_ref().map_or(0, |e| e.code()))
            },
            [Code(0), Code(0), Code(0), Code(0), Code(0)],
        ),
        (
            "OffsetDelete of a topic not subscribed to",
            |f| delete_offsets_out(f, "u"),
            [Code(0), Code(0), Code(0), Code(0), Code(69)],
        ),
        (
            "OffsetDelete of a subscribed topic",
            |f| delete_offsets_out(f, "t"),
            [Code(0), Code(86), Code(86), Code(86), Code(69)],
        ),
        (
            "DescribeGroups",
            |f| {
                let d = f.h.core.describe(G);
                assert_eq!(d.state, f.h.state().as_str());
                Code(0)
            },
            [Code(0), Code(0), Code(0), Code(0), Code(0)],
        ),
        (
            "DeleteGroups",
            |f| Code(f.h.core.plan_delete_group(G).err().map_or(0, |e| e.code())),
            [Code(0), Code(68), Code(68), Code(68), Code(69)],
        ),
    ];
    let mut pairs = 0;
    for (name, request, expected) in table {
        for (state, want) in STATES.iter().zip(expected) {
            let mut f = fixture(*state);
            let got = request(&mut f);
            assert_eq!(got, *want, "{name} in {}", state.as_str());
            pairs += 1;
        }
    }
    assert_eq!(pairs, 22 * 5);
}

/// Static members (KIP-345) in every state: the follower of the fixture has
/// `group.instance.id` "i-b".
#[test]
fn every_state_answers_static_members_as_kafka_does() {
    let table: &[(&str, Request, [Out; 5])] = &[
        (
            "JoinGroup of a restarted static member (instance id, no member id)",
            |f| join_out(f, join_args("", "b", Some("i-b"))),
            [Parked, Parked, Parked, Code(0), Code(15)],
        ),
        (
            "JoinGroup of a static member with its member id",
            |f| {
                let m = f.follower.clone();
                join_out(f, join_args(&m, "b", Some("i-b")))
            },
            [Code(25), Parked, Code(0), Code(0), Code(15)],
        ),
        (
            "Heartbeat naming the instance id with another member id",
            |f| {
                let (g, inst) = (f.generation, f.instance.clone());
                Code(group_code(
                    &f.h.core.heartbeat(G, g, "other", &inst, f.h.now),
                ))
            },
            [Code(25), Code(82), Code(82), Code(82), Code(15)],
        ),
        (
            "LeaveGroup by instance id alone",
            |f| {
                let m = LeavingMember {
                    member_id: String::new(),
                    group_instance_id: f.instance.clone(),
                };
                let o = f.h.core.leave(&f.h.cfg, G, vec![m], f.h.now);
                match o.error {
                    Some(e) => Code(e.code()),
                    None => Code(group_code(&o.members[0].1)),
                }
            },
            [Code(25), Code(0), Code(0), Code(0), Code(15)],
        ),
    ];
    let mut pairs = 0;
    for (name, request, expected) in table {
        for (state, want) in STATES.iter().zip(expected) {
            let mut f = static_fixture(*state);
            let got = request(&mut f);
            assert_eq!(got, *want, "{name} in {}", state.as_str());
            pairs += 1;
        }
    }
    assert_eq!(pairs, 4 * 5);
}

#[test]
fn unknown_group_answers() {
    let mut h = Harness::new(0);
    let mut a = join_args("m", "c", None);
    let j = h.join(a.clone());
    assert_eq!(
        h.join_reply(j).and_then(|r| r.error).map(|e| e.code()),
        Some(25)
    );
    a.group_id = String::new();
    let j = h.join(a);
    assert_eq!(
        h.join_reply(j).and_then(|r| r.error),
        Some(GroupError::InvalidGroupId)
    );
    let s = h.sync(sync_args("m", 1, vec![]));
    assert_eq!(
        h.sync_reply(s).and_then(|r| r.error).map(|e| e.code()),
        Some(25)
    );
    assert_eq!(group_code(&h.core.heartbeat(G, 1, "m", &None, h.now)), 25);
    let o = h.core.leave(
        &h.cfg,
        G,
        vec![LeavingMember {
            member_id: "m".into(),
            group_instance_id: None,
        }],
        h.now,
    );
    assert_eq!(o.error.map(|e| e.code()), Some(25));
    assert_eq!(group_code(&o.members[0].1), 25);
    assert_eq!(
        h.core.plan_delete_group(G).err(),
        Some(GroupError::GroupIdNotFound)
    );
    assert!(h.core.plan_delete_offsets(G, &[]).is_err());
    assert_eq!(h.core.describe(G).state, "Dead");
    // A member commit to an unknown group is from an older generation.
    let plan = h
        .core
        .plan_commit(4096, G, 3, "m", &None, &[part("t", 0, 1)], None, h.now);
    assert_eq!(group_code(&plan.results[0]), 22);
    // A simple commit creates the group, Empty.
    let plan = h
        .core
        .plan_commit(4096, G, -1, "", &None, &[part("t", 0, 1)], None, h.now);
    assert_eq!(group_code(&plan.results[0]), 0);
    assert_eq!(h.state(), GroupState::Empty);
}
