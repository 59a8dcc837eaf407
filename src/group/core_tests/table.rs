//! The answer of every group state to every request.

use super::*;
use crate::error::{group_code, KafkaCode};
use crate::group::error::GroupError;
use crate::group::state::GroupState;
use crate::group::*;

/// Number of group states, the columns of the tables.
const N: usize = 5;

/// The columns of the tables, in the order of [`column`].
const STATES: [GroupState; N] = [
    GroupState::Empty,
    GroupState::PreparingRebalance,
    GroupState::CompletingRebalance,
    GroupState::Stable,
    GroupState::Dead,
];

/// The column of `state`. An exhaustive match: a new `GroupState` does not
/// compile until it is given a column, and a column past `N` does not
/// compile until every row of the tables has an answer for it
/// ([`column_answer`] indexes the rows by a constant).
fn column(state: GroupState) -> usize {
    match state {
        GroupState::Empty => 0,
        GroupState::PreparingRebalance => 1,
        GroupState::CompletingRebalance => 2,
        GroupState::Stable => 3,
        GroupState::Dead => 4,
    }
}

/// The answer of `row` for `state`.
fn column_answer(row: &[Out; N], state: GroupState) -> Out {
    match state {
        GroupState::Empty => row[0],
        GroupState::PreparingRebalance => row[1],
        GroupState::CompletingRebalance => row[2],
        GroupState::Stable => row[3],
        GroupState::Dead => row[4],
    }
}

#[test]
fn every_group_state_is_a_column() {
    for (i, state) in STATES.iter().enumerate() {
        assert_eq!(column(*state), i, "{}", state.as_str());
        let row: [Out; N] = std::array::from_fn(|k| Code(k as i16));
        assert_eq!(column_answer(&row, *state), Code(i as i16));
    }
}

type Request = fn(&mut Fixture) -> Out;

/// Declares the Kafka APIs the group coordinator answers, as an enum and
/// the list of all of them (written once, so the list is complete).
macro_rules! group_apis {
    ($($api:ident,)*) => {
        /// A Kafka API answered by the group coordinator's core.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        enum Api {
            $($api,)*
        }

        impl Api {
            const ALL: &'static [Api] = &[$(Api::$api,)*];
        }
    };
}

group_apis! {
    JoinGroup,
    SyncGroup,
    Heartbeat,
    LeaveGroup,
    OffsetCommit,
    TxnOffsetCommit,
    OffsetFetch,
    OffsetDelete,
    DescribeGroups,
    ListGroups,
    DeleteGroups,
}

/// Declares the rows of the table: each request kind as an enum variant
/// with its API, its name, how to send it and Kafka's answer per state. The
/// enum, its list and the exhaustive matches are written once here.
macro_rules! requests {
    ($($req:ident: $api:ident, $name:literal, $run:expr, $want:expr;)*) => {
        /// A request of the table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        enum Req {
            $($req,)*
        }

        impl Req {
            const ALL: &'static [Req] = &[$(Req::$req,)*];

            fn api(self) -> Api {
                match self {
                    $(Req::$req => Api::$api,)*
                }
            }

            fn name(self) -> &'static str {
                match self {
                    $(Req::$req => $name,)*
                }
            }

            fn send(self, f: &mut Fixture) -> Out {
                match self {
                    $(Req::$req => {
                        let run: Request = $run;
                        run(f)
                    })*
                }
            }

            /// Kafka's answer in each column.
            fn expected(self) -> [Out; N] {
                match self {
                    $(Req::$req => $want,)*
                }
            }
        }
    };
}

/// `s` as one of the names the fixtures use ("?" for any other).
fn known(s: &str) -> &'static str {
    let names = STATES.map(|st| st.as_str());
    names
        .into_iter()
        .chain(["", "consumer", "range"])
        .find(|n| *n == s)
        .unwrap_or("?")
}

fn describe_out(f: &mut Fixture) -> Out {
    let d = f.h.core.describe(G);
    let listed = !d.members.is_empty();
    Described(Shown {
        state: known(&d.state),
        protocol_type: known(&d.protocol_type),
        protocol: known(&d.protocol),
        members: d.members.len(),
        metadata: listed && d.members.iter().all(|m| !m.metadata.is_empty()),
        assignment: listed && d.members.iter().all(|m| !m.assignment.is_empty()),
    })
}

fn list_out(f: &mut Fixture, states: &[&str]) -> Out {
    let states: Vec<String> = states.iter().map(|s| s.to_string()).collect();
    let listed = f.h.core.list(&states, &[]);
    Listed(
        listed
            .iter()
            .find(|g| g.group_id == G)
            .map(|g| known(&g.state)),
    )
}

fn fetch_out(f: &mut Fixture, require_stable: bool) -> Out {
    let got =
        f.h.core
            .fetch_offsets(G, Some(vec![("t".into(), 0)]), require_stable);
    Fetched(got[0].offset, got[0].error.as_ref().map_or(0, |e| e.code()))
}

/// DescribeGroups of the fixture's group in `state`, with `members` listed.
const fn shown(
    state: &'static str,
    protocol: &'static str,
    members: usize,
    metadata: bool,
    assignment: bool,
) -> Out {
    Described(Shown {
        state,
        protocol_type: "consumer",
        protocol,
        members,
        metadata,
        assignment,
    })
}

requests! {
    JoinV4UnknownMember: JoinGroup, "JoinGroup v4 unknown member",
        |f| {
            let mut a = join_args("", "n", None);
            a.require_known_member_id = true;
            join_out(f, a)
        },
        [Code(79), Code(79), Code(79), Code(79), Code(15)];
    JoinV3UnknownMember: JoinGroup, "JoinGroup v3 unknown member",
        |f| join_out(f, join_args("", "n", None)),
        [Parked, Parked, Parked, Parked, Code(15)];
    JoinNewStaticMember: JoinGroup, "JoinGroup new static member",
        |f| join_out(f, join_args("", "n", Some("i-new"))),
        [Parked, Parked, Parked, Parked, Code(15)];
    JoinLeaderSameMetadata: JoinGroup, "JoinGroup known leader, same metadata",
        |f| {
            let l = f.leader.clone();
            join_out(f, join_args(&l, "a", None))
        },
        [Code(25), Parked, Code(0), Parked, Code(15)];
    JoinFollowerSameMetadata: JoinGroup, "JoinGroup known follower, same metadata",
        |f| {
            let m = f.follower.clone();
            join_out(f, join_args(&m, "b", None))
        },
        [Code(25), Parked, Code(0), Code(0), Code(15)];
    JoinFollowerNewMetadata: JoinGroup, "JoinGroup known follower, new metadata",
        |f| {
            let m = f.follower.clone();
            let mut a = join_args(&m, "b", None);
            a.protocols = vec![("range".into(), sub(&["t", "u"]))];
            join_out(f, a)
        },
        [Code(25), Parked, Parked, Parked, Code(15)];
    JoinUnknownMemberId: JoinGroup, "JoinGroup unknown member id",
        |f| join_out(f, join_args("nobody", "n", None)),
        [Code(25), Code(25), Code(25), Code(25), Code(15)];
    SyncLeader: SyncGroup, "SyncGroup leader",
        |f| {
            let l = f.leader.clone();
            sync_out(f, &l)
        },
        [Code(25), Code(27), Parked, Code(0), Code(15)];
    SyncFollower: SyncGroup, "SyncGroup follower",
        |f| {
            let m = f.follower.clone();
            sync_out(f, &m)
        },
        [Code(25), Code(27), Parked, Code(0), Code(15)];
    SyncUnknownMember: SyncGroup, "SyncGroup unknown member",
        |f| sync_out(f, "nobody"),
        [Code(25), Code(25), Code(25), Code(25), Code(15)];
    HeartbeatCurrent: Heartbeat, "Heartbeat member, current generation",
        |f| {
            let (m, g) = (f.follower.clone(), f.generation);
            Code(group_code(&f.h.core.heartbeat(G, g, &m, &None, f.h.now)))
        },
        [Code(25), Code(27), Code(0), Code(0), Code(15)];
    HeartbeatStale: Heartbeat, "Heartbeat member, stale generation",
        |f| {
            let (m, g) = (f.follower.clone(), f.generation - 1);
            Code(group_code(&f.h.core.heartbeat(G, g, &m, &None, f.h.now)))
        },
        [Code(25), Code(22), Code(22), Code(22), Code(15)];
    LeaveMember: LeaveGroup, "LeaveGroup member",
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
        [Code(25), Code(0), Code(0), Code(0), Code(15)];
    CommitSimple: OffsetCommit, "OffsetCommit generation -1, no member (simple)",
        |f| commit_out(f, -1, "", None),
        [Code(0), Code(25), Code(25), Code(25), Code(15)];
    CommitMember: OffsetCommit, "OffsetCommit member, current generation",
        |f| {
            let (m, g) = (f.follower.clone(), f.generation);
            commit_out(f, g, &m, None)
        },
        [Code(25), Code(0), Code(27), Code(0), Code(15)];
    TxnCommitSimple: TxnOffsetCommit, "TxnOffsetCommit generation -1, no member",
        |f| commit_out(f, -1, "", Some(7)),
        [Code(0), Code(0), Code(0), Code(0), Code(15)];
    TxnCommitMember: TxnOffsetCommit, "TxnOffsetCommit member, current generation",
        |f| {
            let (m, g) = (f.follower.clone(), f.generation);
            commit_out(f, g, &m, Some(7))
        },
        [Code(25), Code(0), Code(0), Code(0), Code(15)];
    FetchNothingCommitted: OffsetFetch, "OffsetFetch, nothing committed",
        |f| fetch_out(f, true),
        [Fetched(-1, 0), Fetched(-1, 0), Fetched(-1, 0), Fetched(-1, 0), Fetched(-1, 0)];
    FetchStablePendingTxn: OffsetFetch,
        "OffsetFetch require_stable, a transaction's offset pending (KIP-447)",
        |f| {
            commit_out(f, -1, "", Some(7));
            fetch_out(f, true)
        },
        // Dead refused the TxnOffsetCommit: nothing is pending there.
        [Fetched(-1, 88), Fetched(-1, 88), Fetched(-1, 88), Fetched(-1, 88), Fetched(-1, 0)];
    FetchPendingTxn: OffsetFetch,
        "OffsetFetch without require_stable, a transaction's offset pending",
        |f| {
            commit_out(f, -1, "", Some(7));
            fetch_out(f, false)
        },
        [Fetched(-1, 0), Fetched(-1, 0), Fetched(-1, 0), Fetched(-1, 0), Fetched(-1, 0)];
    DeleteOffsetsUnsubscribed: OffsetDelete, "OffsetDelete of a topic not subscribed to",
        |f| delete_offsets_out(f, "u"),
        [Code(0), Code(0), Code(0), Code(0), Code(69)];
    DeleteOffsetsSubscribed: OffsetDelete, "OffsetDelete of a subscribed topic",
        |f| delete_offsets_out(f, "t"),
        [Code(0), Code(86), Code(86), Code(86), Code(69)];
    // The protocol type stays once set; the protocol is shown once selected
    // (CompletingRebalance, Stable) and assignments once delivered (Stable);
    // each member shows its metadata for the group's protocol whenever one
    // was ever selected (PreparingRebalance lists the joining member "c"
    // too).
    Describe: DescribeGroups, "DescribeGroups",
        describe_out,
        [
            shown("Empty", "", 0, false, false),
            shown("PreparingRebalance", "", 3, false, false),
            shown("CompletingRebalance", "", 2, false, false),
            shown("Stable", "range", 2, true, true),
            shown("Dead", "", 0, false, false),
        ];
    List: ListGroups, "ListGroups, no filter",
        |f| list_out(f, &[]),
        [
            Listed(Some("Empty")),
            Listed(Some("PreparingRebalance")),
            Listed(Some("CompletingRebalance")),
            Listed(Some("Stable")),
            Listed(None),
        ];
    ListStable: ListGroups, "ListGroups, states filter \"stable\" (KIP-518)",
        |f| list_out(f, &["stable"]),
        [Listed(None), Listed(None), Listed(None), Listed(Some("Stable")), Listed(None)];
    DeleteGroup: DeleteGroups, "DeleteGroups",
        |f| Code(f.h.core.plan_delete_group(G).err().map_or(0, |e| e.code())),
        [Code(0), Code(68), Code(68), Code(68), Code(69)];
}

/// Every request against every state, with Kafka's answer (the columns are
/// [`STATES`]).
#[test]
fn every_state_answers_every_request_as_kafka_does() {
    for req in Req::ALL {
        let expected = req.expected();
        for state in STATES {
            let mut f = fixture(state);
            let got = req.send(&mut f);
            assert_eq!(
                got,
                column_answer(&expected, state),
                "{} in {}",
                req.name(),
                state.as_str()
            );
        }
    }
}

/// Every API of the coordinator has a row in the table.
#[test]
fn every_group_api_has_a_row() {
    for api in Api::ALL {
        assert!(
            Req::ALL.iter().any(|r| r.api() == *api),
            "{api:?} has no row"
        );
    }
}

/// A Dead group with members (forced: see [`forced_dead_fixture`]) answers
/// every request as the Dead group DeleteGroups leaves (DescribeGroups of a
/// Dead group lists no members, as Kafka's).
#[test]
fn a_dead_group_answers_from_its_state_alone() {
    for req in Req::ALL {
        let mut f = forced_dead_fixture(None);
        let got = req.send(&mut f);
        let want = column_answer(&req.expected(), GroupState::Dead);
        assert_eq!(got, want, "{} in a Dead group with members", req.name());
    }
}

/// Static members (KIP-345) in every state: the follower of the fixture has
/// `group.instance.id` "i-b".
#[test]
fn every_state_answers_static_members_as_kafka_does() {
    let table: &[(&str, Request, [Out; N])] = &[
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
    for (name, request, expected) in table {
        for state in STATES {
            let mut f = static_fixture(state);
            let got = request(&mut f);
            assert_eq!(
                got,
                column_answer(expected, state),
                "{name} in {}",
                state.as_str()
            );
        }
        let mut f = forced_dead_fixture(Some("i-b"));
        let got = request(&mut f);
        let want = column_answer(expected, GroupState::Dead);
        assert_eq!(got, want, "{name} in a Dead group with members");
    }
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
    // A member commit to an unknown group is from an older generation
    // (OffsetCommit below v9), or names a group not found (v9, KIP-848);
    // neither creates the group.
    let plan = commit_one(&mut h, 3, "m", 1, UnknownGroup::IllegalGeneration);
    assert_eq!(group_code(&plan.results[0]), 22);
    let plan = commit_one(&mut h, 3, "m", 1, UnknownGroup::GroupIdNotFound);
    assert_eq!(group_code(&plan.results[0]), 69);
    assert_eq!(h.core.describe(G).state, "Dead");
    // A simple commit creates the group, Empty.
    let plan = commit_one(&mut h, -1, "", 1, UnknownGroup::IllegalGeneration);
    assert_eq!(group_code(&plan.results[0]), 0);
    assert_eq!(h.state(), GroupState::Empty);
}
