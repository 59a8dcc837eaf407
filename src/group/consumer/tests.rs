//! Unit tests of the consumer group state machine (Kafka 4.4's
//! GroupMetadataManagerTest scenarios, in this crate's terms).

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::assignor::{self, AssignInput};
use super::records::ConsumerRecord;
use super::*;

/// Topics over a map; ids derived from the names.
pub(super) struct Topics(BTreeMap<String, TopicInfo>);

pub(super) fn tid(name: &str) -> Uuid {
    let mut h: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for b in name.bytes() {
        h ^= u128::from(b);
        h = h.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    Uuid::from_u128(h)
}

impl Topics {
    fn new(list: &[(&str, i32)]) -> Topics {
        let mut t = Topics(BTreeMap::new());
        for (name, n) in list {
            t.set(name, *n);
        }
        t
    }

    fn set(&mut self, name: &str, partitions: i32) {
        self.0.insert(
            name.to_string(),
            TopicInfo {
                id: tid(name),
                name: name.to_string(),
                partitions,
            },
        );
    }
}

impl TopicsView for Topics {
    fn by_name(&self, name: &str) -> Option<TopicInfo> {
        self.0.get(name).cloned()
    }
    fn by_id(&self, id: Uuid) -> Option<TopicInfo> {
        self.0.values().find(|t| t.id == id).cloned()
    }
    fn names(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }
}

/// `[(topic, [partitions])]` as an assignment.
pub(super) fn asg(list: &[(&str, &[i32])]) -> Assignment {
    list.iter()
        .filter(|(_, ps)| !ps.is_empty())
        .map(|(t, ps)| (tid(t), ps.iter().copied().collect()))
        .collect()
}

fn owned_list(a: &Assignment) -> Vec<(Uuid, Vec<i32>)> {
    a.iter()
        .map(|(t, ps)| (*t, ps.iter().copied().collect()))
        .collect()
}

pub(super) struct H {
    pub(super) groups: ConsumerGroups,
    pub(super) cfg: ConsumerGroupConfig,
    pub(super) topics: Topics,
    pub(super) ids: MemberIdSource,
    pub(super) now: i64,
    pub(super) records: Vec<ConsumerRecord>,
    pub(super) effects: Vec<Effect>,
}

pub(super) const G: &str = "g";

impl H {
    pub(super) fn new(topics: &[(&str, i32)]) -> H {
        H {
            groups: ConsumerGroups::default(),
            cfg: ConsumerGroupConfig {
                // Targets at once; batching has its own tests.
                assignment_interval_ms: 0,
                ..ConsumerGroupConfig::default()
            },
            topics: Topics::new(topics),
            ids: MemberIdSource::counter(),
            now: 1_000,
            records: Vec::new(),
            effects: Vec::new(),
        }
    }

    pub(super) fn base(member: &str, epoch: i32) -> HeartbeatArgs {
        HeartbeatArgs {
            group_id: G.to_string(),
            member_id: member.to_string(),
            member_epoch: epoch,
            rebalance_timeout_ms: -1,
            client_id: "client".to_string(),
            client_host: "/127.0.0.1".to_string(),
            version: 1,
            ..HeartbeatArgs::default()
        }
    }

    pub(super) fn join_args(member: &str, topics: &[&str]) -> HeartbeatArgs {
        HeartbeatArgs {
            rebalance_timeout_ms: 30_000,
            subscribed_topic_names: Some(topics.iter().map(|t| t.to_string()).collect()),
            owned: Some(Vec::new()),
            ..H::base(member, 0)
        }
    }

    pub(super) fn send(&mut self, args: HeartbeatArgs) -> Result<HeartbeatAnswer, GroupError> {
        let o = self.groups.heartbeat(
            &self.cfg,
            args,
            &self.topics,
            &mut self.ids,
            self.now,
            &mut self.effects,
        );
        if o.result.is_err() {
            assert!(o.records.is_empty(), "records on error: {:?}", o.records);
        }
        self.records.extend(o.records);
        o.result.map_err(|(e, _)| e)
    }

    pub(super) fn join(&mut self, member: &str, topics: &[&str]) -> HeartbeatAnswer {
        match self.send(H::join_args(member, topics)) {
            Ok(a) => a,
            Err(e) => panic!("join {member}: {e}"),
        }
    }

    pub(super) fn hb(
        &mut self,
        member: &str,
        epoch: i32,
        owned: Option<&Assignment>,
    ) -> Result<HeartbeatAnswer, GroupError> {
        let mut args = H::base(member, epoch);
        args.owned = owned.map(owned_list);
        self.send(args)
    }

    pub(super) fn ok(
        &mut self,
        member: &str,
        epoch: i32,
        owned: Option<&Assignment>,
    ) -> HeartbeatAnswer {
        match self.hb(member, epoch, owned) {
            Ok(a) => a,
            Err(e) => panic!("heartbeat {member}@{epoch}: {e}"),
        }
    }

    fn deadline(&mut self) -> Vec<ConsumerRecord> {
        let r = self
            .groups
            .on_deadline(&self.cfg, G, &self.topics, self.now, &mut self.effects);
        self.records.extend(r.clone());
        r
    }

    pub(super) fn describe(&self) -> DescribedGroup {
        match self.groups.describe(G) {
            Some(d) => d,
            None => panic!("no group"),
        }
    }

    pub(super) fn member(&self, id: &str) -> DescribedMember {
        match self
            .describe()
            .members
            .into_iter()
            .find(|m| m.member_id == id)
        {
            Some(m) => m,
            None => panic!("no member {id}"),
        }
    }
}

pub(super) fn kind(r: &ConsumerRecord) -> (u8, bool) {
    match r {
        ConsumerRecord::GroupMetadata { value, .. } => (3, value.is_some()),
        ConsumerRecord::PartitionMetadata { .. } => (4, false),
        ConsumerRecord::MemberMetadata { value, .. } => (5, value.is_some()),
        ConsumerRecord::TargetAssignmentMetadata { value, .. } => (6, value.is_some()),
        ConsumerRecord::TargetAssignmentMember { value, .. } => (7, value.is_some()),
        ConsumerRecord::CurrentMemberAssignment { value, .. } => (8, value.is_some()),
        ConsumerRecord::RegularExpression { value, .. } => (16, value.is_some()),
    }
}

#[test]
fn first_member_gets_every_partition_at_epoch_2() {
    let mut h = H::new(&[("t", 3)]);
    let a = h.join("a", &["t"]);
    assert_eq!(a.member_epoch, 2);
    assert_eq!(a.member_id, "a");
    assert_eq!(a.heartbeat_interval_ms, 5000);
    assert_eq!(a.assignment, Some(asg(&[("t", &[0, 1, 2])])));
    let kinds: Vec<u8> = h.records.iter().map(|r| kind(r).0).collect();
    assert_eq!(kinds, vec![5, 3, 7, 6, 8]);
    let d = h.describe();
    assert_eq!(
        (d.state, d.group_epoch, d.assignment_epoch),
        (ConsumerGroupState::Stable, 2, 2)
    );
    assert_eq!(d.assignor_name, "uniform");
    assert!(h.groups.contains(G));
    assert_eq!(
        h.groups.list(),
        vec![(G.to_string(), ConsumerGroupState::Stable)]
    );
    // Session timer armed at now + 45 s.
    assert!(h.effects.contains(&Effect::Timer {
        group_id: G.to_string(),
        at_ms: 46_000
    }));
    // A plain heartbeat: no change, no assignment, no records.
    h.records.clear();
    let a = h.ok("a", 2, None);
    assert_eq!((a.member_epoch, a.assignment), (2, None));
    assert!(h.records.is_empty());
}

#[test]
fn second_member_waits_for_revocation() {
    let mut h = H::new(&[("t", 4)]);
    h.join("a", &["t"]);
    let all = asg(&[("t", &[0, 1, 2, 3])]);
    let b = h.join("b", &["t"]);
    assert_eq!(b.member_epoch, 3);
    assert_eq!(
        b.assignment,
        Some(Assignment::new()),
        "b waits for a's partitions"
    );
    assert_eq!(h.member("b").target_assignment, asg(&[("t", &[2, 3])]));
    assert_eq!(h.describe().state, ConsumerGroupState::Reconciling);

    // a is asked to revoke 2 and 3, staying at epoch 2.
    let a = h.ok("a", 2, Some(&all));
    assert_eq!(a.member_epoch, 2);
    assert_eq!(a.assignment, Some(asg(&[("t", &[0, 1])])));
    // Not yet revoked: still waiting, b still gets nothing.
    let a = h.ok("a", 2, Some(&all));
    assert_eq!(a.member_epoch, 2);
    let b = h.ok("b", 3, Some(&Assignment::new()));
    assert_eq!(b.assignment, None);
    assert!(h.member("b").assignment.is_empty());

    // a acknowledges; it moves to epoch 3, then b receives 2 and 3.
    let a = h.ok("a", 2, Some(&asg(&[("t", &[0, 1])])));
    assert_eq!(a.member_epoch, 3);
    let b = h.ok("b", 3, Some(&Assignment::new()));
    assert_eq!(b.assignment, Some(asg(&[("t", &[2, 3])])));
    assert_eq!(h.describe().state, ConsumerGroupState::Stable);
}

#[test]
fn leave_bumps_the_epoch_and_hands_partitions_over() {
    let mut h = H::new(&[("t", 2)]);
    h.join("a", &["t"]);
    h.join("b", &["t"]);
    h.ok("a", 2, Some(&asg(&[("t", &[0, 1])])));
    h.ok("a", 2, Some(&asg(&[("t", &[0])])));
    h.ok("b", 3, Some(&Assignment::new()));
    h.records.clear();
    let left = h.ok("b", -1, None);
    assert_eq!(left.member_epoch, -1);
    let kinds: Vec<(u8, bool)> = h.records.iter().map(kind).collect();
    assert_eq!(
        &kinds[..4],
        &[(8, false), (7, false), (5, false), (3, true)]
    );
    let d = h.describe();
    assert_eq!(d.group_epoch, 4);
    assert_eq!(d.members.len(), 1);
    let a = h.ok("a", 3, Some(&asg(&[("t", &[0])])));
    assert_eq!(
        (a.member_epoch, a.assignment),
        (4, Some(asg(&[("t", &[0, 1])])))
    );
    // Leaving twice: unknown.
    assert!(matches!(
        h.hb("b", -1, None),
        Err(GroupError::UnknownMemberId { .. })
    ));
}

#[test]
fn epoch_validation_and_lost_answers() {
    let mut h = H::new(&[("t", 2)]);
    h.join("a", &["t"]);
    assert!(matches!(
        h.hb("x", 2, None),
        Err(GroupError::UnknownMemberId { .. })
    ));
    assert!(matches!(
        h.hb("a", 3, None),
        Err(GroupError::FencedMemberEpoch {
            epoch: 3,
            expected: 2,
            ..
        })
    ));
    // b joins, a moves on to epoch 3 (nothing to revoke: t has 2 partitions, a keeps 1).
    h.join("b", &["t"]);
    let mine = asg(&[("t", &[0, 1])]);
    h.ok("a", 2, Some(&mine));
    let a = h.ok("a", 2, Some(&asg(&[("t", &[0])])));
    assert_eq!(a.member_epoch, 3);
    // The answer was lost: epoch 2 (the previous) with owned ⊆ assigned is accepted.
    let again = h.ok("a", 2, Some(&asg(&[("t", &[0])])));
    assert_eq!(again.member_epoch, 3);
    // …but not without owned partitions, nor with partitions it does not have.
    assert!(matches!(
        h.hb("a", 2, None),
        Err(GroupError::FencedMemberEpoch { .. })
    ));
    assert!(matches!(
        h.hb("a", 2, Some(&mine)),
        Err(GroupError::FencedMemberEpoch { .. })
    ));
    // Epoch 0 without the join fields is not a heartbeat.
    assert!(matches!(
        h.hb("a", 0, None),
        Err(GroupError::InvalidRequest(_))
    ));
}

#[test]
fn join_validation() {
    let mut h = H::new(&[("t", 1)]);
    let mut a = H::join_args("", &["t"]);
    assert!(matches!(
        h.send(a.clone()),
        Err(GroupError::InvalidRequest(_))
    ));
    a.version = 0;
    let named = h.send(a);
    assert!(
        matches!(named, Ok(HeartbeatAnswer { ref member_id, member_epoch: 2, .. }) if member_id == "client-1")
    );
    let mut b = H::join_args("b", &["t"]);
    b.rebalance_timeout_ms = -1;
    assert!(matches!(h.send(b), Err(GroupError::InvalidRequest(_))));
    let mut b = H::join_args("b", &["t"]);
    b.subscribed_topic_names = None;
    assert!(matches!(h.send(b), Err(GroupError::InvalidRequest(_))));
    let mut b = H::join_args("b", &["t"]);
    b.owned = Some(vec![(tid("t"), vec![0])]);
    assert!(matches!(h.send(b), Err(GroupError::InvalidRequest(_))));
    let mut b = H::join_args("b", &["t"]);
    b.owned = None;
    assert!(matches!(h.send(b), Err(GroupError::InvalidRequest(_))));
    assert!(matches!(
        h.send(H::base("b", -3)),
        Err(GroupError::InvalidRequest(_))
    ));
    assert!(matches!(
        h.send(H::base("b", -2)),
        Err(GroupError::InvalidRequest(_))
    ));
    // An unknown group is not created by a heartbeat at epoch > 0.
    let mut other = H::base("b", 3);
    other.group_id = "other".to_string();
    assert!(matches!(
        h.send(other),
        Err(GroupError::UnknownMemberId { .. })
    ));
    assert!(!h.groups.contains("other"));
}

#[test]
fn unsupported_assignor_and_max_size() {
    let mut h = H::new(&[("t", 1)]);
    let mut a = H::join_args("a", &["t"]);
    a.server_assignor = Some("sticky".to_string());
    assert_eq!(
        h.send(a),
        Err(GroupError::UnsupportedAssignor {
            assignor: "sticky".to_string(),
            supported: "uniform, range".to_string(),
        })
    );
    // Kafka's message, which clients show.
    let e = GroupError::UnsupportedAssignor {
        assignor: "sticky".to_string(),
        supported: "uniform, range".to_string(),
    };
    assert_eq!(
        e.to_string(),
        "ServerAssignor sticky is not supported. Supported assignors: uniform, range."
    );
    assert!(!h.groups.contains(G), "no group made by a refused join");
    h.cfg.max_size = 1;
    h.join("a", &["t"]);
    assert_eq!(
        h.send(H::join_args("b", &["t"])),
        Err(GroupError::GroupMaxSizeReached { max_size: 1 })
    );
    // The member itself may rejoin.
    h.join("a", &["t"]);
}

#[test]
fn invalid_regex_is_code_128() {
    let mut h = H::new(&[("t", 1)]);
    let mut a = H::join_args("a", &[]);
    a.subscribed_topic_names = None;
    a.subscribed_topic_regex = Some("(unclosed".to_string());
    let e = h.send(a);
    assert!(matches!(
        e,
        Err(GroupError::InvalidRegularExpression { .. })
    ));
    if let Err(e) = e {
        assert_eq!(crate::error::KafkaCode::code(&e), 128);
    }
}

#[test]
fn regex_picks_up_a_topic_created_later() {
    let mut h = H::new(&[("foo1", 2), ("bar", 2)]);
    let mut a = H::join_args("a", &[]);
    a.subscribed_topic_names = None;
    a.subscribed_topic_regex = Some("foo.*".to_string());
    let ans = h.send(a);
    assert_eq!(
        ans.map(|a| a.assignment),
        Ok(Some(asg(&[("foo1", &[0, 1])])))
    );
    // Nothing changed: no bump.
    let none = h.groups.topics_changed(&h.topics, h.now, &mut h.effects);
    assert!(none.is_empty());
    h.topics.set("foo2", 1);
    h.topics.set("other", 1);
    let recs = h.groups.topics_changed(&h.topics, h.now, &mut h.effects);
    // The regex's new topics (record 16), then the epoch bump.
    assert_eq!(
        recs[0],
        ConsumerRecord::RegularExpression {
            group_id: G.to_string(),
            regex: "foo.*".to_string(),
            value: Some((vec!["foo1".to_string(), "foo2".to_string()], 0, h.now)),
        }
    );
    assert_eq!(kind(&recs[1]), (3, true));
    assert_eq!(h.describe().group_epoch, 3);
    let owned = asg(&[("foo1", &[0, 1])]);
    let got = h.ok("a", 2, Some(&owned));
    assert_eq!(got.member_epoch, 3);
    assert_eq!(
        got.assignment,
        Some(asg(&[("foo1", &[0, 1]), ("foo2", &[0])]))
    );
    // Partitions added to a subscribed topic bump the epoch too.
    h.topics.set("foo2", 3);
    assert!(!h
        .groups
        .topics_changed(&h.topics, h.now, &mut h.effects)
        .is_empty());
    assert_eq!(h.describe().group_epoch, 4);
}

#[test]
fn session_expiry_fences() {
    let mut h = H::new(&[("t", 2)]);
    h.join("a", &["t"]);
    h.now = 20_000;
    h.join("b", &["t"]);
    h.now = 46_000;
    let recs = h.deadline();
    let kinds: Vec<(u8, bool)> = recs.iter().map(kind).collect();
    assert_eq!(
        &kinds[..4],
        &[(8, false), (7, false), (5, false), (3, true)]
    );
    let d = h.describe();
    assert_eq!(d.members.len(), 1);
    assert_eq!(d.members[0].member_id, "b");
    assert!(matches!(
        h.hb("a", 2, None),
        Err(GroupError::UnknownMemberId { .. })
    ));
    // b now gets both partitions (a's were released by the fencing).
    let b = h.ok("b", 3, Some(&Assignment::new()));
    assert_eq!(
        (b.member_epoch, b.assignment),
        (4, Some(asg(&[("t", &[0, 1])])))
    );
    // A deadline with nothing expired changes nothing.
    assert!(h.deadline().is_empty());
}

#[test]
fn rebalance_timeout_fences_a_member_that_does_not_revoke() {
    let mut h = H::new(&[("t", 2)]);
    h.join("a", &["t"]);
    h.join("b", &["t"]);
    h.now = 2_000;
    let all = asg(&[("t", &[0, 1])]);
    h.ok("a", 2, Some(&all));
    assert!(h.effects.contains(&Effect::Timer {
        group_id: G.to_string(),
        at_ms: 32_000
    }));
    h.now = 20_000;
    h.ok("a", 2, Some(&all));
    h.ok("b", 3, Some(&Assignment::new()));
    h.now = 31_999;
    assert!(h.deadline().is_empty());
    h.now = 32_000;
    assert!(!h.deadline().is_empty());
    assert!(matches!(
        h.hb("a", 2, Some(&all)),
        Err(GroupError::UnknownMemberId { .. })
    ));
    let b = h.ok("b", 3, Some(&Assignment::new()));
    assert_eq!(b.assignment, Some(all));
}

#[test]
fn static_member_leaves_and_gets_its_assignment_back() {
    let mut h = H::new(&[("t", 2)]);
    let mut s = H::join_args("s1", &["t"]);
    s.instance_id = Some("i".to_string());
    h.send(s).map(|_| ()).unwrap_or_else(|e| panic!("{e}"));
    h.join("d", &["t"]);
    h.ok("s1", 2, Some(&asg(&[("t", &[0, 1])])));
    h.ok("s1", 2, Some(&asg(&[("t", &[0])])));
    h.ok("d", 3, Some(&Assignment::new()));
    let epoch = h.describe().group_epoch;

    // Active: a second join with the instance id is refused; an impostor fenced.
    let mut again = H::join_args("s2", &["t"]);
    again.instance_id = Some("i".to_string());
    assert!(matches!(
        h.send(again.clone()),
        Err(GroupError::UnreleasedInstanceId { .. })
    ));
    let mut impostor = H::base("d", 3);
    impostor.instance_id = Some("i".to_string());
    assert!(matches!(
        h.send(impostor),
        Err(GroupError::FencedInstanceId { .. })
    ));

    let mut leave = H::base("s1", -2);
    leave.instance_id = Some("i".to_string());
    let left = h.send(leave).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(left.member_epoch, -2);
    assert_eq!(
        h.describe().group_epoch,
        epoch,
        "a temporary leave does not bump"
    );
    assert_eq!(h.member("s1").assignment, asg(&[("t", &[0])]));

    // Rejoin under a new member id: same partitions, no bump, old id gone.
    let back = h.send(again).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back.member_id, "s2");
    assert_eq!(back.member_epoch, epoch);
    assert_eq!(back.assignment, Some(asg(&[("t", &[0])])));
    let d = h.describe();
    assert_eq!(d.group_epoch, epoch);
    assert_eq!(d.state, ConsumerGroupState::Stable);
    let ids: Vec<&str> = d.members.iter().map(|m| m.member_id.as_str()).collect();
    assert_eq!(ids, vec!["d", "s2"]);
    assert!(matches!(
        h.hb("s1", 3, None),
        Err(GroupError::UnknownMemberId { .. })
    ));

    // A static member away longer than the session is removed.
    let mut leave = H::base("s2", -2);
    leave.instance_id = Some("i".to_string());
    h.send(leave).unwrap_or_else(|e| panic!("{e}"));
    h.ok("d", epoch, None);
    h.now += 45_000;
    h.ok("d", epoch, None);
    assert!(!h.deadline().is_empty());
    assert_eq!(h.describe().members.len(), 1);
}

fn layout_input(
    members: &[&str],
) -> (
    BTreeMap<String, BTreeSet<String>>,
    BTreeMap<String, TopicInfo>,
) {
    let topics = Topics::new(&[("a", 3), ("b", 3)]);
    let subs = members
        .iter()
        .map(|m| {
            (
                m.to_string(),
                ["a".to_string(), "b".to_string()].into_iter().collect(),
            )
        })
        .collect();
    (subs, topics.0)
}

#[test]
fn uniform_and_range_layouts() {
    let (subs, infos) = layout_input(&["m1", "m2"]);
    let none = BTreeMap::new();
    let input = AssignInput {
        subscriptions: &subs,
        topics: &infos,
        previous: &none,
    };
    let range = assignor::assign("range", &input);
    assert_eq!(range["m1"], asg(&[("a", &[0, 1]), ("b", &[0, 1])]));
    assert_eq!(range["m2"], asg(&[("a", &[2]), ("b", &[2])]));
    let uniform = assignor::assign("uniform", &input);
    assert_eq!(uniform["m1"], asg(&[("a", &[0, 2]), ("b", &[1])]));
    assert_eq!(uniform["m2"], asg(&[("a", &[1]), ("b", &[0, 2])]));
    // Sticky: m1 held everything; m2 takes 3, m1 keeps the rest.
    let prev: BTreeMap<String, Assignment> = [(
        "m1".to_string(),
        asg(&[("a", &[0, 1, 2]), ("b", &[0, 1, 2])]),
    )]
    .into_iter()
    .collect();
    let input = AssignInput {
        subscriptions: &subs,
        topics: &infos,
        previous: &prev,
    };
    let sticky = assignor::assign("uniform", &input);
    assert_eq!(sticky["m1"], asg(&[("a", &[0, 1, 2])]));
    assert_eq!(sticky["m2"], asg(&[("b", &[0, 1, 2])]));

    // Through heartbeats with server_assignor = range.
    let mut h = H::new(&[("a", 3), ("b", 3)]);
    for m in ["m1", "m2"] {
        let mut j = H::join_args(m, &["a", "b"]);
        j.server_assignor = Some("range".to_string());
        h.send(j).unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(h.describe().assignor_name, "range");
    assert_eq!(
        h.member("m2").target_assignment,
        asg(&[("a", &[2]), ("b", &[2])])
    );
}

#[test]
fn uniform_balances_heterogeneous_subscriptions() {
    let topics = Topics::new(&[("a", 2), ("b", 2)]);
    let subs: BTreeMap<String, BTreeSet<String>> = [
        (
            "m1".to_string(),
            ["a".to_string(), "b".to_string()].into_iter().collect(),
        ),
        ("m2".to_string(), ["a".to_string()].into_iter().collect()),
    ]
    .into_iter()
    .collect();
    let none = BTreeMap::new();
    let input = AssignInput {
        subscriptions: &subs,
        topics: &topics.0,
        previous: &none,
    };
    let out = assignor::assign("uniform", &input);
    assert_eq!(out["m1"], asg(&[("b", &[0, 1])]));
    assert_eq!(out["m2"], asg(&[("a", &[0, 1])]));
}

#[test]
fn check_commit_rules() {
    let mut h = H::new(&[("t", 2)]);
    h.join("a", &["t"]);
    h.join("b", &["t"]);
    h.ok("a", 2, Some(&asg(&[("t", &[0, 1])])));
    h.ok("a", 2, Some(&asg(&[("t", &[0])])));
    h.ok("b", 3, Some(&Assignment::new()));
    let t = Some(tid("t"));
    assert_eq!(h.groups.check_commit(G, "a", 3, t, 0), Ok(()));
    // Partition 0 was assigned to a at epoch 2: a commit at 2 is fine (KIP-1251).
    assert_eq!(h.groups.check_commit(G, "a", 2, t, 0), Ok(()));
    // b's partition 1 was assigned at 3: a commit at 2 is stale.
    assert!(matches!(
        h.groups.check_commit(G, "b", 2, t, 1),
        Err(GroupError::StaleMemberEpoch { .. })
    ));
    assert!(matches!(
        h.groups.check_commit(G, "a", 2, None, 0),
        Err(GroupError::StaleMemberEpoch { .. })
    ));
    assert!(matches!(
        h.groups.check_commit(G, "a", 4, t, 0),
        Err(GroupError::FencedMemberEpoch { .. })
    ));
    assert!(matches!(
        h.groups.check_commit(G, "x", 3, t, 0),
        Err(GroupError::UnknownMemberId { .. })
    ));
    assert_eq!(
        h.groups.check_commit("nope", "a", 3, t, 0),
        Err(GroupError::GroupIdNotFound)
    );
}

#[test]
fn replay_rebuilds_an_equal_group() {
    let mut h = H::new(&[("t", 4), ("u", 2)]);
    h.join("a", &["t", "u"]);
    h.join("b", &["t"]);
    let mut s = H::join_args("s", &["u"]);
    s.instance_id = Some("i".to_string());
    h.send(s).unwrap_or_else(|e| panic!("{e}"));
    h.ok("a", 2, Some(&asg(&[("t", &[0, 1, 2, 3]), ("u", &[0, 1])])));
    h.join("c", &["t"]);
    h.ok("b", 3, Some(&Assignment::new()));
    let c_epoch = h.member("c").member_epoch;
    h.ok("c", c_epoch, Some(&Assignment::new()));
    h.ok("a", 2, Some(&Assignment::new()));
    let before = h.describe();
    let mut loaded = ConsumerGroups::default();
    for r in h.records.clone() {
        loaded.replay(r);
    }
    let mut out = Vec::new();
    loaded.arm_after_load(&h.cfg, h.now, &mut out);
    assert_eq!(loaded.describe(G), Some(before));
    assert!(out.contains(&Effect::Timer {
        group_id: G.to_string(),
        at_ms: h.now + 45_000
    }));
    // And it goes on: the loaded group answers the members where they are.
    for m in ["a", "b", "c"] {
        let e = h.member(m).member_epoch;
        let mut args = H::base(m, e);
        args.owned = Some(owned_list(&h.member(m).assignment));
        let a = loaded.heartbeat(&h.cfg, args, &h.topics, &mut h.ids, h.now, &mut out);
        assert!(a.result.is_ok(), "{m}: {:?}", a.result);
    }
    // A group tombstone removes the group.
    loaded.replay(ConsumerRecord::GroupMetadata {
        group_id: G.to_string(),
        value: None,
    });
    assert!(!loaded.contains(G));
}

/// A client as the state machine sees it: what it holds, what it is still
/// revoking (acknowledged later), its epoch.
#[derive(Default, Clone)]
struct Client {
    epoch: i32,
    held: Assignment,
    revoking: Assignment,
}

fn union(a: &Assignment, b: &Assignment) -> Assignment {
    let mut u = a.clone();
    for (t, ps) in b {
        u.entry(*t).or_default().extend(ps.iter().copied());
    }
    u
}

struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// No partition is ever held by two clients, whatever the order of joins,
/// leaves and (late) acknowledgements; the group settles once they stop.
#[test]
fn no_partition_is_ever_held_twice() {
    let mut h = H::new(&[("t", 7), ("u", 5)]);
    let mut rng = Lcg(42);
    let names = ["m0", "m1", "m2", "m3", "m4"];
    let mut clients: BTreeMap<String, Client> = BTreeMap::new();
    let (mut revocations, mut late_acks, mut joins, mut leaves) = (0, 0, 0, 0);
    for step in 0..600 {
        h.now += 100;
        let who = names[rng.next(names.len() as u64) as usize].to_string();
        let op = rng.next(10);
        if let Some(c) = clients.get(&who).cloned() {
            if op == 0 {
                h.ok(&who, -1, None);
                clients.remove(&who);
                leaves += 1;
            } else {
                let owned = union(&c.held, &c.revoking);
                let a = h.ok(&who, c.epoch, Some(&owned));
                let c = clients.entry(who.clone()).or_default();
                c.epoch = a.member_epoch;
                // Revocations done before this heartbeat are acknowledged now.
                c.revoking.clear();
                if let Some(new) = a.assignment {
                    let mut gone = Assignment::new();
                    for (t, ps) in &c.held {
                        let keep = new.get(t).cloned().unwrap_or_default();
                        let lost: BTreeSet<i32> = ps.difference(&keep).copied().collect();
                        if !lost.is_empty() {
                            gone.insert(*t, lost);
                        }
                    }
                    if !gone.is_empty() {
                        revocations += 1;
                        if rng.next(2) == 0 {
                            late_acks += 1;
                            c.revoking = gone;
                        }
                    }
                    c.held = new;
                }
            }
        } else if op < 5 {
            let subs: &[&str] = if op % 2 == 0 { &["t", "u"] } else { &["t"] };
            let a = h.join(&who, subs);
            joins += 1;
            clients.insert(
                who.clone(),
                Client {
                    epoch: a.member_epoch,
                    held: a.assignment.unwrap_or_default(),
                    revoking: Assignment::new(),
                },
            );
        }
        // The invariant: what clients hold (or still revoke) never overlaps.
        let mut seen: BTreeMap<(Uuid, i32), String> = BTreeMap::new();
        for (id, c) in &clients {
            for (t, ps) in union(&c.held, &c.revoking) {
                for p in ps {
                    if let Some(other) = seen.insert((t, p), id.clone()) {
                        panic!("step {step}: partition {t}-{p} held by {other} and {id}");
                    }
                }
            }
        }
    }
    assert!(revocations > 20 && late_acks > 10 && joins > 20 && leaves > 10);
    // Quiet rounds: everyone converges to a stable, complete assignment.
    for _ in 0..4 {
        for (id, c) in clients.iter_mut() {
            let a = h.ok(id, c.epoch, Some(&c.held));
            c.epoch = a.member_epoch;
            if let Some(new) = a.assignment {
                c.held = new;
            }
        }
    }
    let d = h.describe();
    if !clients.is_empty() {
        assert_eq!(d.state, ConsumerGroupState::Stable);
        let total: usize = clients
            .values()
            .flat_map(|c| c.held.values())
            .map(|ps| ps.len())
            .sum();
        let subscribed_u = d
            .members
            .iter()
            .any(|m| m.subscribed_topic_names.contains(&"u".to_string()));
        assert_eq!(total, 7 + if subscribed_u { 5 } else { 0 });
    }
}

#[test]
fn a_deleted_topic_is_dropped_without_revocation() {
    let mut h = H::new(&[("t", 1), ("u", 1)]);
    let a = h.join("a", &["t", "u"]);
    let all = asg(&[("t", &[0]), ("u", &[0])]);
    assert_eq!(a.assignment, Some(all.clone()));
    h.topics.0.remove("u");
    assert!(!h
        .groups
        .topics_changed(&h.topics, h.now, &mut h.effects)
        .is_empty());
    let a = h.ok("a", 2, Some(&all));
    assert_eq!(
        (a.member_epoch, a.assignment),
        (3, Some(asg(&[("t", &[0])])))
    );
    assert_eq!(h.describe().state, ConsumerGroupState::Stable);
}

#[test]
fn full_requests_and_changed_owned_get_the_assignment() {
    let mut h = H::new(&[("t", 2)]);
    h.join("a", &["t"]);
    let mine = asg(&[("t", &[0, 1])]);
    // Same owned: nothing sent.
    assert_eq!(h.ok("a", 2, Some(&mine)).assignment, None);
    // Owned differs from the assignment: sent again.
    assert_eq!(
        h.ok("a", 2, Some(&asg(&[("t", &[0])]))).assignment,
        Some(mine.clone())
    );
    // A full request (rebalance timeout, subscription, owned): sent.
    let mut full = H::base("a", 2);
    full.rebalance_timeout_ms = 30_000;
    full.subscribed_topic_names = Some(vec!["t".to_string()]);
    full.owned = Some(owned_list(&mine));
    assert_eq!(h.send(full).map(|a| a.assignment), Ok(Some(mine)));
    // A member that rejoins with epoch 0 gets its partitions back at once.
    let again = h.join("a", &["t"]);
    assert_eq!(
        (again.member_epoch, again.assignment),
        (2, Some(asg(&[("t", &[0, 1])])))
    );
}

/// KIP-1263 batching as Kafka 4.4 does it: a bump within
/// `group.consumer.assignment.interval.ms` of the last target leaves the
/// group Assigning (a joiner gets the current target's epoch and nothing);
/// the first heartbeat after the interval computes the target.
#[test]
fn target_waits_for_the_assignment_interval() {
    let mut h = H::new(&[("t", 4)]);
    h.cfg.assignment_interval_ms = 1000;
    let a = h.join("a", &["t"]);
    assert_eq!(a.member_epoch, 2, "a new group assigns at once");
    h.now += 100;
    let b = h.join("b", &["t"]);
    assert_eq!(b.member_epoch, 2);
    assert_eq!(b.assignment, Some(Assignment::new()));
    let d = h.describe();
    assert_eq!(d.state, ConsumerGroupState::Assigning);
    assert_eq!((d.group_epoch, d.assignment_epoch), (3, 2));
    h.now += 800;
    assert_eq!(
        h.ok("b", 2, None).member_epoch,
        2,
        "still within the interval"
    );
    assert_eq!(h.describe().state, ConsumerGroupState::Assigning);
    h.now += 100;
    let b = h.ok("b", 2, None);
    assert_eq!(b.member_epoch, 3, "the interval passed: target at epoch 3");
    let d = h.describe();
    assert_eq!((d.group_epoch, d.assignment_epoch), (3, 3));
    assert_eq!(d.state, ConsumerGroupState::Reconciling);
}
