//! Unit tests of the admin requests on consumer groups (`admin.rs`).

use std::collections::BTreeMap;

use uuid::Uuid;

use super::super::{ConsumerGroupConfig, ConsumerGroups, HeartbeatArgs, TopicInfo, TopicsView};
use crate::group::error::GroupError;
use crate::group::state::MemberIdSource;

/// Topics over a map; ids derived from the names.
struct Topics(BTreeMap<String, TopicInfo>);

impl Topics {
    fn new(list: &[&str]) -> Topics {
        Topics(
            list.iter()
                .zip(1u128..)
                .map(|(n, i)| {
                    let info = TopicInfo {
                        id: Uuid::from_u128(i),
                        name: n.to_string(),
                        partitions: 1,
                    };
                    (n.to_string(), info)
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

fn args(epoch: i32) -> HeartbeatArgs {
    HeartbeatArgs {
        group_id: "g".to_string(),
        member_id: "m1".to_string(),
        member_epoch: epoch,
        rebalance_timeout_ms: if epoch == 0 { 30_000 } else { -1 },
        client_id: "client".to_string(),
        client_host: "/127.0.0.1".to_string(),
        version: 1,
        ..HeartbeatArgs::default()
    }
}

/// A member's group is not deletable and subscribes its names and regex
/// matches; an empty group's tombstones (6, 4, 3) replayed after its
/// records leave nothing.
#[test]
fn an_empty_group_is_deleted_by_its_tombstones() {
    let topics = Topics::new(&["a", "b1", "c"]);
    let cfg = ConsumerGroupConfig::default();
    let mut ids = MemberIdSource::counter();
    let mut groups = ConsumerGroups::default();
    let mut records = Vec::new();
    let mut effects = Vec::new();
    let join = HeartbeatArgs {
        subscribed_topic_names: Some(vec!["a".to_string()]),
        subscribed_topic_regex: Some("b.*".to_string()),
        owned: Some(Vec::new()),
        ..args(0)
    };
    let o = groups.heartbeat(&cfg, join, &topics, &mut ids, 1_000, &mut effects);
    assert!(o.result.is_ok(), "{:?}", o.result);
    records.extend(o.records);
    let subscribed = groups.subscribed_topics("g", &topics);
    let names: Option<Vec<String>> = subscribed.map(|s| s.into_iter().collect());
    assert_eq!(names, Some(vec!["a".to_string(), "b1".to_string()]));
    assert_eq!(groups.plan_delete("g"), Err(GroupError::NonEmptyGroup));
    let o = groups.heartbeat(&cfg, args(-1), &topics, &mut ids, 1_000, &mut effects);
    assert!(o.result.is_ok(), "{:?}", o.result);
    records.extend(o.records);
    let tombstones = groups.plan_delete("g").expect("deletable once empty");
    let kinds: Vec<(i16, bool)> = tombstones
        .iter()
        .map(|r| {
            let (k, v) = r.encode();
            (i16::from_be_bytes([k[0], k[1]]), v.is_none())
        })
        .collect();
    assert_eq!(kinds, vec![(6, true), (4, true), (3, true)]);
    assert!(groups.take_for_delete("g").is_some());
    assert_eq!(groups.plan_delete("g"), Err(GroupError::GroupIdNotFound));
    let mut loaded = ConsumerGroups::default();
    for r in records.into_iter().chain(tombstones) {
        loaded.replay(r);
    }
    assert!(
        !loaded.contains("g"),
        "a load after the delete finds no group"
    );
}
