//! Unit tests of share group membership.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::*;
use crate::group::consumer::TopicInfo;

struct Topics(BTreeMap<String, TopicInfo>);

impl Topics {
    fn new(list: &[(&str, i32)]) -> Topics {
        Topics(
            list.iter()
                .enumerate()
                .map(|(i, (n, p))| {
                    (
                        n.to_string(),
                        TopicInfo {
                            id: Uuid::from_u128(i as u128 + 1),
                            name: n.to_string(),
                            partitions: *p,
                        },
                    )
                })
                .collect(),
        )
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

fn join(member: &str, topics: &[&str]) -> ShareHeartbeatArgs {
    ShareHeartbeatArgs {
        group_id: "g".to_string(),
        member_id: member.to_string(),
        member_epoch: 0,
        subscribed_topic_names: Some(topics.iter().map(|t| t.to_string()).collect()),
        client_id: "c".to_string(),
        client_host: "/127.0.0.1".to_string(),
        ..ShareHeartbeatArgs::default()
    }
}

fn beat(member: &str, epoch: i32) -> ShareHeartbeatArgs {
    ShareHeartbeatArgs {
        member_epoch: epoch,
        subscribed_topic_names: None,
        ..join(member, &[])
    }
}

fn count(a: &Option<Assignment>) -> usize {
    a.as_ref().map_or(0, |a| a.values().map(|p| p.len()).sum())
}

#[test]
fn members_share_a_single_partition_and_take_targets_at_once() {
    let topics = Topics::new(&[("t", 1)]);
    let cfg = ShareGroupConfig::default();
    let mut g = ShareGroups::default();
    let (a, recs) = g.heartbeat(&cfg, &join("a", &["t"]), &topics, 0);
    let a = a.expect("join");
    // Kafka 4.4: a new group is at epoch 1 (empty target); the first
    // member's join makes it 2.
    assert_eq!((a.member_epoch, count(&a.assignment)), (2, 1));
    assert!(recs
        .iter()
        .any(|r| matches!(r, ShareGroupRecord::GroupMetadata { epoch: Some(2), .. })));
    // A second member reads the same partition: nothing to revoke.
    let (b, _) = g.heartbeat(&cfg, &join("b", &["t"]), &topics, 0);
    let b = b.expect("join");
    assert_eq!((b.member_epoch, count(&b.assignment)), (3, 1));
    let (a2, _) = g.heartbeat(&cfg, &beat("a", 2), &topics, 10);
    let a2 = a2.expect("heartbeat");
    assert_eq!(a2.member_epoch, 3);
    assert_eq!(a2.assignment, None, "unchanged partitions are not sent");
}

#[test]
fn requests_are_checked_with_kafkas_texts() {
    let topics = Topics::new(&[("t", 2)]);
    let cfg = ShareGroupConfig::default();
    let mut g = ShareGroups::default();
    let err =
        |g: &mut ShareGroups, a: ShareHeartbeatArgs| g.heartbeat(&cfg, &a, &topics, 0).0.err();
    assert_eq!(
        err(&mut g, join("", &["t"])),
        Some(GroupError::InvalidRequest(
            "MemberId can't be empty.".into()
        ))
    );
    assert_eq!(
        err(&mut g, join("a", &[])),
        Some(GroupError::InvalidRequest(
            "SubscribedTopicNames must be set in first request.".into()
        ))
    );
    assert_eq!(
        err(&mut g, beat("a", -2)),
        Some(GroupError::InvalidRequest("MemberEpoch is invalid.".into()))
    );
    // No group: GROUP_ID_NOT_FOUND (Kafka 4.4), for a heartbeat or a leave.
    assert_eq!(err(&mut g, beat("a", 3)), Some(GroupError::GroupIdNotFound));
    assert_eq!(
        err(&mut g, beat("a", -1)),
        Some(GroupError::GroupIdNotFound)
    );
    assert!(g.describe("g").is_none(), "no group made by a refused join");
    g.heartbeat(&cfg, &join("a", &["t"]), &topics, 0)
        .0
        .expect("join");
    assert!(matches!(
        err(&mut g, beat("a", 7)),
        Some(GroupError::FencedMemberEpoch {
            epoch: 7,
            expected: 2,
            ..
        })
    ));
    let small = ShareGroupConfig {
        max_size: 1,
        ..ShareGroupConfig::default()
    };
    assert!(matches!(
        g.heartbeat(&small, &join("b", &["t"]), &topics, 0).0,
        Err(GroupError::GroupMaxSizeReached { max_size: 1 })
    ));
    // A full group refuses an unknown member before it is found unknown.
    assert!(matches!(
        g.heartbeat(&small, &beat("z", 3), &topics, 0).0,
        Err(GroupError::GroupMaxSizeReached { max_size: 1 })
    ));
    assert!(matches!(
        err(&mut g, beat("z", 3)),
        Some(GroupError::UnknownMemberId { .. })
    ));
}

#[test]
fn a_leave_or_a_silent_member_gives_its_partitions_to_the_others() {
    let topics = Topics::new(&[("t", 4)]);
    let cfg = ShareGroupConfig::default();
    let mut g = ShareGroups::default();
    for m in ["a", "b"] {
        g.heartbeat(&cfg, &join(m, &["t"]), &topics, 0)
            .0
            .expect("join");
    }
    let (_, e, members) = g.describe("g").expect("group");
    assert_eq!(e, 3);
    assert_eq!(members["b"].1.values().map(|p| p.len()).sum::<usize>(), 2);
    let a = g
        .heartbeat(&cfg, &beat("a", 2), &topics, 50)
        .0
        .expect("heartbeat");
    assert_eq!((a.member_epoch, count(&a.assignment)), (3, 2));
    let (left, recs) = g.heartbeat(&cfg, &beat("b", -1), &topics, 100);
    assert_eq!(left.expect("leave").member_epoch, -1);
    assert!(recs
        .iter()
        .any(|r| matches!(r, ShareGroupRecord::MemberMetadata { value: None, .. })));
    let (a, _) = g.heartbeat(&cfg, &beat("a", 3), &topics, 200);
    let a = a.expect("heartbeat");
    assert_eq!((a.member_epoch, count(&a.assignment)), (4, 4));
    // b joins again and goes silent: fenced after the session timeout.
    g.heartbeat(&cfg, &join("b", &["t"]), &topics, 300)
        .0
        .expect("join");
    g.heartbeat(&cfg, &beat("a", 4), &topics, 40_000)
        .0
        .expect("heartbeat");
    let (fenced, _) = g.on_deadline("g", &topics, 45_300);
    assert_eq!(fenced, vec!["b".to_string()]);
    let (state, _, members) = g.describe("g").expect("group");
    assert_eq!((state, members.len()), (ShareGroupState::Stable, 1));
}

#[test]
fn a_grown_topic_bumps_the_epoch_at_the_next_heartbeat() {
    let mut topics = Topics::new(&[("t", 1)]);
    let cfg = ShareGroupConfig::default();
    let mut g = ShareGroups::default();
    g.heartbeat(&cfg, &join("a", &["t"]), &topics, 0)
        .0
        .expect("join");
    if let Some(t) = topics.0.get_mut("t") {
        t.partitions = 3;
    }
    let (a, _) = g.heartbeat(&cfg, &beat("a", 2), &topics, 10);
    let a = a.expect("heartbeat");
    assert_eq!((a.member_epoch, count(&a.assignment)), (3, 3));
}

#[test]
fn replayed_records_give_back_the_group() {
    let topics = Topics::new(&[("t", 3)]);
    let cfg = ShareGroupConfig::default();
    let mut g = ShareGroups::default();
    let mut written = Vec::new();
    for m in ["a", "b"] {
        let (r, recs) = g.heartbeat(&cfg, &join(m, &["t"]), &topics, 0);
        r.expect("join");
        written.extend(recs);
    }
    let (r, recs) = g.heartbeat(&cfg, &beat("a", 2), &topics, 0);
    r.expect("heartbeat");
    written.extend(recs);
    let mut loaded = ShareGroups::default();
    for r in written {
        let (k, v) = r.encode();
        let back = ShareGroupRecord::decode(&k, v.as_deref()).expect("decode");
        loaded.replay(back);
    }
    assert_eq!(loaded.describe_full("g"), g.describe_full("g"));
    // Record 15: the partitions of the target, written once, read back.
    let t_id = Uuid::from_u128(1);
    assert_eq!(
        g.state_topics("g"),
        Some(vec![(t_id, "t".to_string(), vec![0, 1, 2])])
    );
    assert_eq!(loaded.state_topics("g"), g.state_topics("g"));
    assert_eq!(
        loaded.arm_after_load(&|_| 45_000, 1_000),
        vec![("g".to_string(), 46_000)]
    );
    // The loaded group takes its topics as they are: no bump.
    let (a, _) = loaded.heartbeat(&cfg, &beat("a", 3), &topics, 2_000);
    assert_eq!(a.expect("heartbeat").member_epoch, 3);
    // Empty groups delete with tombstones; a group with members does not.
    assert_eq!(loaded.plan_delete("g"), Err(GroupError::NonEmptyGroup));
    for (m, e) in [("a", 3), ("b", 3)] {
        loaded
            .heartbeat(&cfg, &beat(m, -1), &topics, 3_000)
            .0
            .expect("leave");
        let _ = e;
    }
    let tombstones = loaded.plan_delete("g").expect("delete");
    assert!(tombstones.iter().all(|r| r.encode().1.is_none()));
    loaded.forget_empty("g");
    assert!(!loaded.contains("g"));
}

#[test]
fn a_grown_topic_bumps_the_group_from_the_image() {
    let mut topics = Topics::new(&[("t", 1)]);
    let cfg = ShareGroupConfig::default();
    let mut g = ShareGroups::default();
    g.heartbeat(&cfg, &join("a", &["t"]), &topics, 0)
        .0
        .expect("join");
    assert!(g.topics_changed(&topics).is_empty(), "nothing changed");
    if let Some(t) = topics.0.get_mut("t") {
        t.partitions = 2;
    }
    let recs = g.topics_changed(&topics);
    assert!(recs
        .iter()
        .any(|r| matches!(r, ShareGroupRecord::GroupMetadata { epoch: Some(3), .. })));
    let (a, _) = g.heartbeat(&cfg, &beat("a", 2), &topics, 10);
    let a = a.expect("heartbeat");
    assert_eq!((a.member_epoch, count(&a.assignment)), (3, 2));
}

#[test]
fn offsets_changes_need_an_empty_share_group() {
    let topics = Topics::new(&[("t", 2)]);
    let cfg = ShareGroupConfig::default();
    let mut g = ShareGroups::default();
    let (r, _) = g.heartbeat(&cfg, &join("a", &["t"]), &topics, 0);
    r.expect("join");
    let id = Uuid::from_u128(1);
    assert_eq!(
        g.change_state_topics("g", true, |s| {
            s.remove(&id);
        }),
        Err(GroupError::NonEmptyGroup)
    );
    assert_eq!(
        g.change_state_topics("none", false, |_| {}),
        Err(GroupError::GroupIdNotFound)
    );
    // An alter of a group that does not exist creates it, empty.
    let recs = g
        .change_state_topics("new", true, |s| {
            s.add(id, "t", [1]);
        })
        .expect("created");
    assert_eq!(recs.len(), 3, "{recs:?}");
    assert_eq!(
        g.state_topics("new"),
        Some(vec![(id, "t".to_string(), vec![1])])
    );
    let recs = g
        .change_state_topics("new", false, |s| {
            s.remove(&id);
        })
        .expect("deleted");
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(g.state_topics("new"), Some(vec![]));
}
