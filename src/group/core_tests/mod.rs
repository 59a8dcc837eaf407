//! Unit tests of the group coordinator's core (membership, offsets, admin
//! views, load) with a fake clock: no broker, no glommio. [`table`] pins the
//! answer of every group state to every request; [`transitions`] walks the
//! classic protocol's transitions and deadlines. This file holds the
//! harness and the per-state fixtures.

mod table;
mod transitions;

use bytes::Bytes;

use super::error::GroupError;
use super::membership::{Effect, GroupCore};
use super::state::{GroupState, RequestHandle};
use super::*;
use crate::error::{group_code, KafkaCode};

pub(super) const G: &str = "g";
pub(super) const SESSION_MS: i32 = 10_000;
pub(super) const REBALANCE_MS: i32 = 20_000;
pub(super) const DELAY_MS: i32 = 3_000;

/// ConsumerProtocolSubscription bytes for `topics`.
pub(super) fn sub(topics: &[&str]) -> Bytes {
    let mut m = vec![0u8, 1];
    m.extend((topics.len() as i32).to_be_bytes());
    for t in topics {
        m.extend((t.len() as i16).to_be_bytes());
        m.extend(t.as_bytes());
    }
    m.extend([0xff, 0xff, 0xff, 0xff]);
    Bytes::from(m)
}

pub(super) fn join_args(member_id: &str, client: &str, instance: Option<&str>) -> JoinArgs {
    JoinArgs {
        group_id: G.into(),
        member_id: member_id.into(),
        group_instance_id: instance.map(str::to_string),
        client_id: client.into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: SESSION_MS,
        rebalance_timeout_ms: REBALANCE_MS,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), sub(&["t"]))],
        require_known_member_id: false,
    }
}

pub(super) fn sync_args(
    member_id: &str,
    generation: i32,
    assignments: Vec<(String, Bytes)>,
) -> SyncArgs {
    SyncArgs {
        group_id: G.into(),
        generation_id: generation,
        member_id: member_id.into(),
        group_instance_id: None,
        protocol_type: None,
        protocol_name: None,
        assignments,
    }
}

pub(super) fn part(topic: &str, partition: i32, offset: i64) -> CommitPartition {
    CommitPartition {
        topic: topic.into(),
        partition,
        offset,
        leader_epoch: -1,
        metadata: None,
        error: None,
    }
}

/// The core with a fake clock, the effects it queued and the timers armed.
pub(super) struct Harness {
    pub(super) core: GroupCore,
    pub(super) cfg: GroupConfig,
    pub(super) now: i64,
    pub(super) next: u64,
    pub(super) effects: Vec<Effect>,
    pub(super) timers: Vec<(String, i64)>,
}

impl Harness {
    pub(super) fn new(initial_delay_ms: i32) -> Harness {
        Harness {
            core: GroupCore::default(),
            cfg: GroupConfig {
                initial_rebalance_delay_ms: initial_delay_ms,
                ..GroupConfig::default()
            },
            now: 1_000_000,
            next: 0,
            effects: Vec::new(),
            timers: Vec::new(),
        }
    }

    /// Moves the core's effects here; timers go to `timers`.
    pub(super) fn collect(&mut self) {
        for e in self.core.take_effects() {
            match e {
                Effect::Timer { group_id, at_ms } => self.timers.push((group_id, at_ms)),
                other => self.effects.push(other),
            }
        }
    }

    pub(super) fn handle(&mut self) -> RequestHandle {
        self.next += 1;
        RequestHandle(self.next)
    }

    pub(super) fn join(&mut self, args: JoinArgs) -> RequestHandle {
        let h = self.handle();
        self.core.join(&self.cfg, &args, h, self.now);
        self.collect();
        h
    }

    pub(super) fn sync(&mut self, args: SyncArgs) -> RequestHandle {
        let h = self.handle();
        self.core.sync(&args, h, self.now);
        self.collect();
        h
    }

    /// The answer to JoinGroup `h`, if it was given.
    pub(super) fn join_reply(&mut self, h: RequestHandle) -> Option<JoinResult> {
        let i = self
            .effects
            .iter()
            .position(|e| matches!(e, Effect::Join { handle, .. } if *handle == h))?;
        match self.effects.remove(i) {
            Effect::Join { result, .. } => Some(result),
            _ => None,
        }
    }

    /// The answer to SyncGroup `h`, if it was given.
    pub(super) fn sync_reply(&mut self, h: RequestHandle) -> Option<SyncResult> {
        let i = self
            .effects
            .iter()
            .position(|e| matches!(e, Effect::Sync { handle, .. } if *handle == h))?;
        match self.effects.remove(i) {
            Effect::Sync { result, .. } => Some(result),
            _ => None,
        }
    }

    /// Completes every queued assignment append with `stored`.
    pub(super) fn store(&mut self, stored: Result<(), GroupError>) {
        let pending: Vec<(String, i32)> = self
            .effects
            .iter()
            .filter_map(|e| match e {
                Effect::StoreAssignment {
                    group_id,
                    generation,
                    ..
                } => Some((group_id.clone(), *generation)),
                _ => None,
            })
            .collect();
        self.effects
            .retain(|e| !matches!(e, Effect::StoreAssignment { .. }));
        for (g, generation) in pending {
            self.core
                .assignment_stored(&self.cfg, &g, generation, stored.clone(), self.now);
            self.collect();
        }
    }

    /// Advances the clock by `ms`, firing every timer that falls due.
    pub(super) fn advance(&mut self, ms: i64) {
        let end = self.now + ms;
        loop {
            self.timers.sort_by_key(|(_, at)| *at);
            match self.timers.first() {
                Some((_, at)) if *at <= end => {
                    let (g, at) = self.timers.remove(0);
                    self.now = self.now.max(at);
                    self.core.on_deadline(&self.cfg, &g, at, self.now);
                    self.collect();
                }
                _ => break,
            }
        }
        self.now = end;
    }

    pub(super) fn state(&self) -> GroupState {
        self.core
            .groups
            .get(G)
            .map_or(GroupState::Dead, |g| g.state)
    }

    pub(super) fn generation(&self) -> i32 {
        self.core.groups.get(G).map_or(-1, |g| g.generation)
    }

    pub(super) fn persisted(&self) -> usize {
        self.effects
            .iter()
            .filter(|e| matches!(e, Effect::Persist { .. }))
            .count()
    }
}

/// A group with a leader and a follower, brought to `state`.
pub(super) struct Fixture {
    pub(super) h: Harness,
    pub(super) leader: String,
    pub(super) follower: String,
    pub(super) generation: i32,
    /// The follower's `group.instance.id` (static fixture only).
    pub(super) instance: Option<String>,
}

pub(super) fn fixture(state: GroupState) -> Fixture {
    fixture_with(state, None)
}

/// As [`fixture`], with a static follower (`group.instance.id` "i-b").
pub(super) fn static_fixture(state: GroupState) -> Fixture {
    fixture_with(state, Some("i-b"))
}

fn fixture_with(state: GroupState, follower_instance: Option<&str>) -> Fixture {
    let mut h = Harness::new(DELAY_MS);
    let ja = h.join(join_args("", "a", None));
    let jb = h.join(join_args("", "b", follower_instance));
    assert_eq!(h.state(), GroupState::PreparingRebalance);
    h.advance(i64::from(DELAY_MS));
    let ra = h
        .join_reply(ja)
        .expect("leader joined at the initial delay");
    let rb = h
        .join_reply(jb)
        .expect("follower joined at the initial delay");
    assert_eq!((ra.error.clone(), rb.error.clone()), (None, None));
    assert_eq!(ra.leader, ra.member_id);
    let mut f = Fixture {
        leader: ra.member_id,
        follower: rb.member_id,
        generation: ra.generation_id,
        instance: follower_instance.map(str::to_string),
        h,
    };
    assert_eq!(f.h.state(), GroupState::CompletingRebalance);
    if state == GroupState::CompletingRebalance {
        return f;
    }
    let assignments = vec![
        (f.leader.clone(), Bytes::from_static(b"A")),
        (f.follower.clone(), Bytes::from_static(b"B")),
    ];
    let sl = f.h.sync(sync_args(&f.leader, f.generation, assignments));
    let mut follower_sync = sync_args(&f.follower, f.generation, vec![]);
    follower_sync.group_instance_id = f.instance.clone();
    let sf = f.h.sync(follower_sync);
    f.h.store(Ok(()));
    assert_eq!(
        f.h.sync_reply(sl).map(|r| r.assignment),
        Some(Bytes::from_static(b"A"))
    );
    assert_eq!(
        f.h.sync_reply(sf).map(|r| r.assignment),
        Some(Bytes::from_static(b"B"))
    );
    assert_eq!(f.h.state(), GroupState::Stable);
    match state {
        GroupState::Stable => {}
        GroupState::PreparingRebalance => {
            f.h.join(join_args("", "c", None));
            assert_eq!(f.h.state(), GroupState::PreparingRebalance);
        }
        GroupState::Empty | GroupState::Dead => {
            let members = vec![
                LeavingMember {
                    member_id: f.leader.clone(),
                    group_instance_id: None,
                },
                LeavingMember {
                    member_id: f.follower.clone(),
                    group_instance_id: f.instance.clone(),
                },
            ];
            let o = f.h.core.leave(&f.h.cfg, G, members, f.h.now);
            f.h.collect();
            assert_eq!(o.error, None);
            assert_eq!(f.h.state(), GroupState::Empty);
            if state == GroupState::Dead {
                // Dead as the core reaches it: DeleteGroups marks the Empty
                // group Dead while its tombstones are appended.
                let now = f.h.now;
                let tombstones = f.h.core.begin_delete_group(G, now);
                assert!(tombstones.is_ok(), "{tombstones:?}");
                assert_eq!(f.h.state(), GroupState::Dead);
            }
        }
        GroupState::CompletingRebalance => {}
    }
    f.h.effects.clear();
    f
}

/// A Stable group (leader, follower, generation and assignments kept) with
/// Dead forced onto it. The core never gives a group with members this
/// state (only DeleteGroups of an Empty group marks one Dead); it is kept so
/// the tables show a Dead group answers from its state alone, whatever it
/// still holds.
pub(super) fn forced_dead_fixture(follower_instance: Option<&str>) -> Fixture {
    let mut f = fixture_with(GroupState::Stable, follower_instance);
    let now = f.h.now;
    if let Some(g) = f.h.core.groups.get_mut(G) {
        g.transition(GroupState::Dead, now);
    }
    f
}

/// What a request got: an answer's Kafka code, or parked for later.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Out {
    /// Answered now with this Kafka code.
    Code(i16),
    /// Parked; answered later.
    Parked,
    /// OffsetFetch of one partition: the offset shown (-1 for none) and the
    /// partition's Kafka code.
    Fetched(i64, i16),
    /// DescribeGroups: what it shows of the group.
    Described(Shown),
    /// ListGroups: the state it lists the group in, None when not listed.
    Listed(Option<&'static str>),
}
pub(super) use Out::{Code, Described, Fetched, Listed, Parked};

/// What DescribeGroups shows of a group.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Shown {
    /// State name.
    pub(super) state: &'static str,
    /// Protocol type ("" for none).
    pub(super) protocol_type: &'static str,
    /// Selected protocol (assignor) name, "" when not shown.
    pub(super) protocol: &'static str,
    /// Number of members listed.
    pub(super) members: usize,
    /// Whether every listed member shows its metadata (false when none is
    /// listed).
    pub(super) metadata: bool,
    /// Whether every listed member shows its assignment (false when none
    /// is listed).
    pub(super) assignment: bool,
}

pub(super) fn join_out(f: &mut Fixture, args: JoinArgs) -> Out {
    let h = f.h.join(args);
    match f.h.join_reply(h) {
        Some(r) => Code(r.error.map_or(0, |e| e.code())),
        None => Parked,
    }
}

pub(super) fn sync_out(f: &mut Fixture, member: &str) -> Out {
    let (leader, generation) = (f.leader.clone(), f.generation);
    let assignments = if member == leader {
        vec![(leader.clone(), Bytes::from_static(b"A"))]
    } else {
        Vec::new()
    };
    let h = f.h.sync(sync_args(member, generation, assignments));
    match f.h.sync_reply(h) {
        Some(r) => Code(r.error.map_or(0, |e| e.code())),
        None => Parked,
    }
}

/// A plain OffsetCommit of offset `offset` for partition t-0 of group G
/// (`unknown`: the answer for a group that does not exist).
pub(super) fn commit_one(
    h: &mut Harness,
    generation: i32,
    member: &str,
    offset: i64,
    unknown: UnknownGroup,
) -> crate::group::offsets::CommitPlan {
    h.core.plan_commit(
        4096,
        G,
        generation,
        member,
        &None,
        &[part("t", 0, offset)],
        None,
        unknown,
        h.now,
    )
}

pub(super) fn commit_out(
    f: &mut Fixture,
    generation: i32,
    member: &str,
    producer: Option<i64>,
) -> Out {
    let plan = f.h.core.plan_commit(
        4096,
        G,
        generation,
        member,
        &None,
        &[part("t", 0, 5)],
        producer,
        UnknownGroup::IllegalGeneration,
        f.h.now,
    );
    Code(group_code(&plan.results[0]))
}

pub(super) fn delete_offsets_out(f: &mut Fixture, topic: &str) -> Out {
    match f.h.core.plan_delete_offsets(G, &[(topic.to_string(), 0)]) {
        Ok(plan) => Code(group_code(&plan.results[0])),
        Err(e) => Code(e.code()),
    }
}
