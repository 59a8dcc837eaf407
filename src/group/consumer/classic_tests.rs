//! Unit tests of classic members inside a consumer group and of the
//! conversions (Kafka 4.4's GroupMetadataManagerTest classic-member and
//! ConsumerProtocolMigrationTest scenarios, in this crate's terms).

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_subscription::TopicPartition;
use kafka_protocol::messages::{ConsumerProtocolAssignment, ConsumerProtocolSubscription};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use super::classic::{ClassicMember, ClassicSnapshot};
use super::tests::{kind, G, H};
use crate::group::error::GroupError;
use crate::group::JoinArgs;

/// A ConsumerProtocolSubscription v1 of `topics` owning `owned`.
fn sub(topics: &[&str], owned: &[(&str, &[i32])]) -> Bytes {
    let msg = ConsumerProtocolSubscription::default()
        .with_topics(
            topics
                .iter()
                .map(|t| StrBytes::from_string(t.to_string()))
                .collect(),
        )
        .with_owned_partitions(
            owned
                .iter()
                .map(|(t, ps)| {
                    TopicPartition::default()
                        .with_topic(StrBytes::from_string(t.to_string()).into())
                        .with_partitions(ps.to_vec())
                })
                .collect(),
        );
    let mut b = BytesMut::new();
    b.extend_from_slice(&1i16.to_be_bytes());
    msg.encode(&mut b, 1).expect("encode");
    b.freeze()
}

/// (topic, partitions) pairs.
type Parts = Vec<(String, Vec<i32>)>;

/// (topic, partitions) of a ConsumerProtocolAssignment.
fn parts(bytes: &Bytes) -> Parts {
    let mut b = bytes.clone();
    let v = i16::from_be_bytes([b[0], b[1]]);
    let _ = b.split_to(2);
    let a = ConsumerProtocolAssignment::decode(&mut b, v).expect("decode");
    a.assigned_partitions
        .iter()
        .map(|tp| (tp.topic.to_string(), tp.partitions.clone()))
        .collect()
}

fn classic(member: &str, owned: &[(&str, &[i32])]) -> JoinArgs {
    JoinArgs {
        group_id: G.to_string(),
        member_id: member.to_string(),
        client_id: "classic".to_string(),
        client_host: "/127.0.0.1".to_string(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".to_string(),
        protocols: vec![("range".to_string(), sub(&["t"], owned))],
        require_known_member_id: true,
        ..JoinArgs::default()
    }
}

impl H {
    fn cjoin(&mut self, args: &JoinArgs) -> Result<super::classic::JoinArgsed, GroupError> {
        let (r, records) = self.groups.classic_join(
            &self.cfg,
            args,
            &self.topics,
            &mut self.ids,
            self.now,
            &mut self.effects,
        );
        self.records.extend(records);
        r
    }

    fn csync(&mut self, member: &str, generation: i32) -> Result<Bytes, GroupError> {
        self.groups
            .classic_sync(
                G,
                member,
                None,
                generation,
                Some("consumer"),
                Some("range"),
                &self.topics,
                self.now,
                &mut self.effects,
            )
            .map(|(_, a)| a)
    }

    fn cbeat(&mut self, member: &str, generation: i32) -> Result<(), GroupError> {
        self.groups
            .classic_heartbeat(G, member, None, generation, self.now, &mut self.effects)
    }
}

#[test]
fn classic_member_shares_a_consumer_group_revoking_before_it_gets() {
    let mut h = H::new(&[("t", 6)]);
    let a = h.join("a", &["t"]);
    assert_eq!(a.member_epoch, 2);
    let all = super::tests::asg(&[("t", &[0, 1, 2, 3, 4, 5])]);
    h.ok("a", 2, Some(&all));

    // KIP-394: an unknown dynamic member is given an id first.
    let id = match h.cjoin(&classic("", &[])) {
        Err(GroupError::MemberIdRequired { member_id }) => member_id,
        other => panic!("{other:?}"),
    };
    let j = h.cjoin(&classic(&id, &[])).expect("join");
    assert_eq!(j.protocol_name, "range");
    assert_eq!(j.generation_id, 3, "the new member is at the new epoch");
    // Its partitions are still a's: nothing yet, and no rejoin asked while
    // it waits for them.
    assert_eq!(parts(&h.csync(&id, 3).expect("sync")), vec![]);
    h.cbeat(&id, 3).expect("waiting on unreleased partitions");
    assert!(matches!(
        h.cbeat(&id, 2),
        Err(GroupError::IllegalGeneration { .. })
    ));

    // a revokes three, then the classic member is asked to rejoin for them.
    let kept = h.ok("a", 2, Some(&all)).assignment.expect("revocation");
    assert_eq!(kept.values().map(|p| p.len()).sum::<usize>(), 3);
    h.ok("a", 2, Some(&kept));
    assert_eq!(h.cbeat(&id, 3), Err(GroupError::RebalanceInProgress));
    let j = h.cjoin(&classic(&id, &[])).expect("rejoin");
    let got = parts(&h.csync(&id, j.generation_id).expect("sync"));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1.len(), 3);
    h.cbeat(&id, j.generation_id).expect("stable");
    assert!(!h.groups.all_classic(G), "a speaks the consumer protocol");

    // A consumer-protocol member is not answered on the classic path.
    assert!(matches!(
        h.cbeat("a", 3),
        Err(GroupError::UnknownMemberId { .. })
    ));
    // A protocol the group's classic members do not support is refused.
    let mut other = classic("", &[]);
    other.protocols = vec![("roundrobin".to_string(), sub(&["t"], &[]))];
    assert_eq!(
        h.cjoin(&other).map(|_| ()),
        Err(GroupError::InconsistentGroupProtocol)
    );
    other.protocol_type = "connect".to_string();
    assert_eq!(
        h.cjoin(&other).map(|_| ()),
        Err(GroupError::InconsistentGroupProtocol)
    );

    // The classic member leaves; a takes everything back at a new epoch.
    let (outcomes, records) = h
        .groups
        .classic_leave(G, &[(id.clone(), None)], &h.topics, h.now);
    assert_eq!(outcomes, vec![Ok(())]);
    assert!(records.iter().any(|r| kind(r) == (3, true)));
    assert_eq!(h.describe().members.len(), 1);
}

#[test]
fn cooperative_classic_member_keeps_what_it_owns_while_revoking() {
    let mut h = H::new(&[("t", 4)]);
    let id = "c1";
    let mut first = classic(id, &[]);
    first.require_known_member_id = false;
    // A consumer group needs a member first: a consumer-protocol one.
    h.join("a", &["t"]);
    h.ok("a", 2, Some(&super::tests::asg(&[("t", &[0, 1, 2, 3])])));
    h.ok("a", 2, Some(&super::tests::asg(&[("t", &[0, 1, 2, 3])])));
    let j = h.cjoin(&first).expect("join");
    // a leaves: the classic member's next join gets every partition.
    h.ok("a", -1, None);
    let rejoin = classic(id, &[]);
    let j2 = h.cjoin(&rejoin).expect("rejoin");
    assert!(j2.generation_id > j.generation_id);
    let got = parts(&h.csync(id, j2.generation_id).expect("sync"));
    assert_eq!(got, vec![("t".to_string(), vec![0, 1, 2, 3])]);
    assert!(h.groups.all_classic(G));
    // Owning them all, a new target with fewer makes it revoke first: its
    // join keeps what stays, and it is asked to rejoin until it revoked.
    h.join("b", &["t"]);
    let owned: &[i32] = &[0, 1, 2, 3];
    let j3 = h.cjoin(&classic(id, &[("t", owned)])).expect("join");
    assert_eq!(j3.generation_id, j2.generation_id, "unrevoked: same epoch");
    let kept = parts(&h.csync(id, j3.generation_id).expect("sync"));
    assert_eq!(kept[0].1.len(), 2);
    assert_eq!(
        h.cbeat(id, j3.generation_id),
        Err(GroupError::RebalanceInProgress)
    );
    let kept_now: Vec<i32> = kept[0].1.clone();
    let j4 = h
        .cjoin(&classic(id, &[("t", kept_now.as_slice())]))
        .expect("rejoin");
    assert!(j4.generation_id > j3.generation_id);
    h.cbeat(id, j4.generation_id).expect("stable");
}

#[test]
fn upgrade_keeps_generation_and_assignment_and_downgrade_gives_them_back() {
    let mut h = H::new(&[("t", 4)]);
    let assignment = |ps: &[i32]| {
        let msg = ConsumerProtocolAssignment::default().with_assigned_partitions(vec![
            kafka_protocol::messages::consumer_protocol_assignment::TopicPartition::default()
                .with_topic(StrBytes::from_string("t".to_string()).into())
                .with_partitions(ps.to_vec()),
        ]);
        let mut b = BytesMut::new();
        b.extend_from_slice(&1i16.to_be_bytes());
        msg.encode(&mut b, 1).expect("encode");
        b.freeze()
    };
    let member = |id: &str, ps: &[i32]| ClassicMember {
        member_id: id.to_string(),
        instance_id: None,
        client_id: "classic".to_string(),
        client_host: "/127.0.0.1".to_string(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocols: vec![("range".to_string(), sub(&["t"], &[]))],
        assignment: assignment(ps),
    };
    let snapshot = ClassicSnapshot {
        group_id: G.to_string(),
        generation: 7,
        protocol_name: Some("range".to_string()),
        members: vec![member("m1", &[0, 1]), member("m2", &[2, 3])],
    };
    let records = h
        .groups
        .upgrade(&h.cfg, &snapshot, &h.topics, h.now, &mut h.effects)
        .expect("upgrade");
    let kinds: Vec<u8> = records.iter().map(|r| kind(r).0).collect();
    assert_eq!(kinds, vec![5, 5, 3, 7, 7, 6, 8, 8]);
    let d = h.describe();
    assert_eq!((d.group_epoch, d.assignment_epoch), (7, 7));
    assert_eq!(h.member("m1").member_epoch, 7);
    assert_eq!(
        h.member("m2").assignment,
        super::tests::asg(&[("t", &[2, 3])])
    );
    assert!(h.groups.all_classic(G));

    // Loaded from its records, the group is the same; sessions restart
    // with the consumer session timeout, as Kafka arms them at a load.
    let mut loaded = super::ConsumerGroups::default();
    for r in records.iter().cloned() {
        loaded.replay(r);
    }
    let mut timers = Vec::new();
    loaded.arm_after_load(&h.cfg, 50_000, &mut timers);
    assert_eq!(loaded.describe(G), Some(h.describe()));
    assert_eq!(
        timers,
        vec![crate::group::membership::Effect::Timer {
            group_id: G.to_string(),
            at_ms: 50_000 + i64::from(h.cfg.session_timeout_ms),
        }]
    );

    // Back to classic: the members, their generation and assignment.
    let (tombstones, back) = h
        .groups
        .downgrade(G, usize::MAX, &h.topics)
        .expect("downgrade");
    assert_eq!(tombstones.len(), 2 * 3 + 2);
    assert!(tombstones.iter().all(|r| !kind(r).1));
    assert_eq!(back.generation, 7);
    assert_eq!(back.protocol_name.as_deref(), Some("range"));
    let got: Vec<(String, Parts)> = back
        .members
        .iter()
        .map(|m| (m.member_id.clone(), parts(&m.assignment)))
        .collect();
    assert_eq!(
        got,
        vec![
            ("m1".to_string(), vec![("t".to_string(), vec![0, 1])]),
            ("m2".to_string(), vec![("t".to_string(), vec![2, 3])]),
        ]
    );
    assert!(!h.groups.contains(G));
}

#[test]
fn no_downgrade_beyond_the_classic_group_size_or_with_consumer_members() {
    let mut h = H::new(&[("t", 2)]);
    h.join("a", &["t"]);
    let mut j = classic("c", &[]);
    j.require_known_member_id = false;
    h.cjoin(&j).expect("join");
    assert!(h.groups.downgrade(G, usize::MAX, &h.topics).is_none());
    let epoch = h.member("c").member_epoch;
    h.ok("a", -1, None);
    assert!(h.groups.downgrade(G, 0, &h.topics).is_none());
    let (_, snapshot) = h.groups.downgrade(G, 1, &h.topics).expect("downgrade");
    // The classic member's generation, not the epoch a's leave bumped to:
    // its commits go on being accepted until it rejoins.
    assert_eq!(snapshot.generation, epoch);
}

#[test]
fn an_empty_consumer_group_gives_way_with_its_tombstones() {
    let mut h = H::new(&[("t", 2)]);
    h.join("a", &["t"]);
    assert!(
        h.groups.remove_empty(G).is_empty(),
        "not while it has members"
    );
    h.ok("a", -1, None);
    let t = h.groups.remove_empty(G);
    let kinds: Vec<(u8, bool)> = t.iter().map(kind).collect();
    assert_eq!(kinds, vec![(6, false), (3, false)]);
    assert!(!h.groups.contains(G));
}
