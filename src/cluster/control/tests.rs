//! The active controller's decisions, one rule per test, with fixed dice
//! and a fake clock.

use super::*;
use crate::cluster::metadata::NO_LEADER;

/// Dice that always give 0 and counting topic ids.
#[derive(Default)]
struct Fixed(u128);

impl Dice for Fixed {
    fn below(&mut self, _n: usize) -> usize {
        0
    }
    fn topic_id(&mut self) -> Uuid {
        self.0 += 1;
        Uuid::from_u128(self.0)
    }
}

const SESSION: Duration = Duration::from_secs(9);

fn rules() -> Rules {
    Rules {
        session_timeout: SESSION,
        open_files_limit: None,
        election: crate::cluster::elr::ElectionRules::default(),
        node_id: 1,
    }
}

struct Cluster {
    image: MetadataImage,
    live: Liveness,
    now: Instant,
    dice: Fixed,
    offset: u64,
}

impl Cluster {
    fn new() -> Cluster {
        Cluster {
            image: MetadataImage::empty("cluster-a".into()),
            live: Liveness::default(),
            now: Instant::now(),
            dice: Fixed::default(),
            offset: 0,
        }
    }

    /// Decides `req` and applies its records as the next entry; gives the
    /// reply (with a registration's epoch filled in as the quorum does).
    fn run(&mut self, req: ControllerRequest) -> (ControllerReply, usize) {
        let d = decide(
            &self.image,
            &req,
            &mut self.live,
            self.now,
            &rules(),
            &mut self.dice,
        );
        let n = d.records.len();
        let mut reply = d.reply;
        if n > 0 {
            self.offset += 1;
            self.image = self.image.apply(self.offset, &d.records);
            if let ControllerReply::RegisterBroker(Ok(_)) = reply {
                reply = ControllerReply::RegisterBroker(Ok(self.offset as i64));
            }
        }
        (reply, n)
    }

    /// Registers broker `id` after a clean shutdown (or a first start).
    fn register(&mut self, id: i32, incarnation: u128, rack: Option<&str>) -> ControllerReply {
        let previous = self.image.registrations.get(&id).map(|b| b.epoch);
        self.register_with(id, incarnation, rack, previous)
    }

    fn register_with(
        &mut self,
        id: i32,
        incarnation: u128,
        rack: Option<&str>,
        previous_broker_epoch: Option<i64>,
    ) -> ControllerReply {
        self.run(ControllerRequest::RegisterBroker {
            broker_id: id,
            incarnation_id: Uuid::from_u128(incarnation),
            cluster_id: "cluster-a".into(),
            endpoints: vec![Endpoint {
                listener: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 9090 + id as u16,
            }],
            rack: rack.map(str::to_string),
            previous_broker_epoch,
        })
        .0
    }

    fn heartbeat(&mut self, id: i32, shutdown: bool) -> ControllerReply {
        let epoch = self.image.registrations.get(&id).map_or(-1, |b| b.epoch);
        self.run(ControllerRequest::BrokerHeartbeat {
            broker_id: id,
            broker_epoch: epoch,
            metadata_offset: self.offset,
            want_fence: false,
            want_shutdown: shutdown,
        })
        .0
    }

    /// Registers and unfences brokers `ids`.
    fn alive(ids: &[i32]) -> Cluster {
        let mut c = Cluster::new();
        for id in ids {
            c.register(*id, *id as u128, None);
            c.heartbeat(*id, false);
        }
        c
    }

    fn create(
        &mut self,
        name: &str,
        partitions: i32,
        rf: i16,
    ) -> Result<CreatedTopic, MetadataError> {
        self.create_with(name, partitions, rf, &[])
    }

    fn create_with(
        &mut self,
        name: &str,
        partitions: i32,
        rf: i16,
        configs: &[(&str, &str)],
    ) -> Result<CreatedTopic, MetadataError> {
        let req = ControllerRequest::CreateTopics {
            topics: vec![NewTopic {
                name: name.into(),
                partitions,
                replication_factor: rf,
                assignments: None,
                configs: configs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                topic_id: None,
            }],
            validate_only: false,
        };
        match self.run(req).0 {
            ControllerReply::CreateTopics(mut r) => r.remove(0),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_new_broker_registers_fenced_and_is_unfenced_once_caught_up() {
    let mut c = Cluster::new();
    assert_eq!(
        c.register(1, 7, None),
        ControllerReply::RegisterBroker(Ok(1))
    );
    assert!(c.image.brokers(None).is_empty());
    // Behind its registration: stays fenced.
    let d = decide(
        &c.image,
        &ControllerRequest::BrokerHeartbeat {
            broker_id: 1,
            broker_epoch: 1,
            metadata_offset: 0,
            want_fence: false,
            want_shutdown: false,
        },
        &mut c.live,
        c.now,
        &rules(),
        &mut c.dice,
    );
    assert!(d.records.is_empty());
    assert_eq!(
        d.reply,
        ControllerReply::BrokerHeartbeat(Ok(HeartbeatReply {
            is_caught_up: false,
            is_fenced: true,
            should_shutdown: false
        }))
    );
    // Caught up: unfenced.
    let r = c.heartbeat(1, false);
    assert!(matches!(
        r,
        ControllerReply::BrokerHeartbeat(Ok(HeartbeatReply {
            is_fenced: false,
            ..
        }))
    ));
    assert_eq!(c.image.brokers(None).len(), 1);
    // The same process registering again keeps its epoch, writes nothing.
    assert_eq!(
        c.register(1, 7, None),
        ControllerReply::RegisterBroker(Ok(1))
    );
}

#[test]
fn registration_checks_cluster_id_and_live_duplicates() {
    let mut c = Cluster::alive(&[1]);
    let r = c.run(ControllerRequest::RegisterBroker {
        broker_id: 2,
        incarnation_id: Uuid::from_u128(2),
        cluster_id: "other".into(),
        endpoints: vec![],
        rack: None,
        previous_broker_epoch: None,
    });
    assert!(matches!(
        r,
        (
            ControllerReply::RegisterBroker(Err(LifecycleError::InconsistentClusterId { .. })),
            0
        )
    ));
    // Another process with id 1 while 1 heartbeats: refused.
    assert!(matches!(
        c.register(1, 99, None),
        ControllerReply::RegisterBroker(Err(LifecycleError::DuplicateRegistration {
            broker: 1,
            ..
        }))
    ));
    // After its session expired (or on a controller that never heard from
    // it), the new process takes over with a new epoch.
    c.now += SESSION + Duration::from_secs(1);
    let old = c.image.registrations[&1].epoch;
    assert!(matches!(c.register(1, 99, None), ControllerReply::RegisterBroker(Ok(e)) if e > old));
    let mut fresh = Liveness::default();
    fresh.reset(&c.image, c.now);
    c.live = fresh;
    c.heartbeat(1, false);
    let mut fresh = Liveness::default();
    fresh.reset(&c.image, c.now);
    c.live = fresh;
    assert!(matches!(
        c.register(1, 100, None),
        ControllerReply::RegisterBroker(Ok(_))
    ));
}

#[test]
fn stale_epochs_and_unknown_brokers_are_refused() {
    let mut c = Cluster::alive(&[1]);
    let epoch = c.image.registrations[&1].epoch;
    let hb = |broker_id, broker_epoch| ControllerRequest::BrokerHeartbeat {
        broker_id,
        broker_epoch,
        metadata_offset: 100,
        want_fence: false,
        want_shutdown: false,
    };
    assert!(matches!(
        c.run(hb(1, epoch - 1)).0,
        ControllerReply::BrokerHeartbeat(Err(LifecycleError::StaleBrokerEpoch { .. }))
    ));
    assert!(matches!(
        c.run(hb(5, 1)).0,
        ControllerReply::BrokerHeartbeat(Err(LifecycleError::NotRegistered { broker: 5 }))
    ));
    assert!(matches!(
        c.run(ControllerRequest::AllocateProducerIds {
            broker_id: 1,
            broker_epoch: epoch + 5
        })
        .0,
        ControllerReply::ProducerIds(Err(LifecycleError::StaleBrokerEpoch { .. }))
    ));
}

#[test]
fn rf3_topic_spreads_leaders_and_replicas_over_three_brokers() {
    let mut c = Cluster::alive(&[1, 2, 3]);
    let t = c.create("orders", 6, 3).unwrap();
    assert_eq!((t.partitions, t.replication_factor), (6, 3));
    let topic = c.image.topic("orders").unwrap().clone();
    let mut leads = BTreeMap::new();
    for p in &topic.assignments {
        assert_eq!(p.replicas.len(), 3);
        assert_eq!(p.isr, p.replicas);
        assert_eq!(p.leader, p.replicas[0]);
        *leads.entry(p.leader).or_insert(0) += 1;
    }
    assert_eq!(leads.into_values().collect::<Vec<_>>(), [2, 2, 2]);
    assert!(matches!(
        c.create("orders", 1, 1),
        Err(MetadataError::TopicAlreadyExists { .. })
    ));
    c.create("a.b", 1, 1).unwrap();
    assert!(
        matches!(c.create("a_b", 1, 1), Err(MetadataError::InvalidTopic(_))),
        "'.' and '_' collide"
    );
    assert!(matches!(
        c.create("a b", 1, 1),
        Err(MetadataError::InvalidTopic(_))
    ));
    assert!(matches!(
        c.create("x", 0, 1),
        Err(MetadataError::InvalidPartitions(_))
    ));
    assert!(matches!(
        c.create("x", 1, 4),
        Err(MetadataError::InvalidReplicationFactor {
            requested: 4,
            brokers: 3
        })
    ));
}

#[test]
fn fenced_brokers_get_no_new_replicas_and_validate_only_writes_nothing() {
    let mut c = Cluster::alive(&[1, 2, 3]);
    c.now += SESSION + Duration::from_secs(1);
    c.live.beat(1, c.now);
    c.live.beat(2, c.now);
    let recs = expire_sessions(&c.image, &c.live, c.now, &rules());
    c.offset += 1;
    c.image = c.image.apply(c.offset, &recs);
    assert!(!c.image.is_alive(3));
    assert!(matches!(
        c.create("t", 1, 3),
        Err(MetadataError::InvalidReplicationFactor { brokers: 2, .. })
    ));
    c.create("t", 4, 2).unwrap();
    assert!(c
        .image
        .topic("t")
        .unwrap()
        .assignments
        .iter()
        .all(|p| !p.replicas.contains(&3)));
    let req = ControllerRequest::CreateTopics {
        topics: vec![NewTopic {
            name: "v".into(),
            partitions: 1,
            replication_factor: 1,
            assignments: None,
            configs: BTreeMap::new(),
            topic_id: None,
        }],
        validate_only: true,
    };
    let (reply, n) = c.run(req);
    assert!(matches!(reply, ControllerReply::CreateTopics(ref r) if r[0].is_ok()));
    assert_eq!(n, 0);
    assert!(c.image.topic("v").is_none());
}

#[test]
fn two_topics_of_one_request_are_decided_in_order() {
    let mut c = Cluster::alive(&[1]);
    let topic = |name: &str| NewTopic {
        name: name.into(),
        partitions: 1,
        replication_factor: 1,
        assignments: None,
        configs: BTreeMap::new(),
        topic_id: None,
    };
    let (reply, _) = c.run(ControllerRequest::CreateTopics {
        topics: vec![topic("a"), topic("a"), topic("b")],
        validate_only: false,
    });
    let ControllerReply::CreateTopics(r) = reply else {
        panic!()
    };
    assert!(r[0].is_ok() && r[2].is_ok());
    assert!(matches!(
        r[1],
        Err(MetadataError::TopicAlreadyExists { .. })
    ));
    assert_eq!(c.image.topics.len(), 2);
}

#[test]
fn explicit_assignments_are_checked() {
    let mut c = Cluster::alive(&[1, 2]);
    let with = |lists: Vec<Vec<i32>>| ControllerRequest::CreateTopics {
        topics: vec![NewTopic {
            name: "m".into(),
            partitions: -1,
            replication_factor: -1,
            assignments: Some(lists),
            configs: BTreeMap::new(),
            topic_id: None,
        }],
        validate_only: false,
    };
    let err = |c: &mut Cluster, lists| match c.run(with(lists)).0 {
        ControllerReply::CreateTopics(mut r) => r.remove(0).err(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        err(&mut c, vec![vec![1, 7]]),
        Some(InvalidAssignment::UnknownBroker { broker: 7 }.into())
    );
    assert_eq!(
        err(&mut c, vec![vec![1, 1]]),
        Some(InvalidAssignment::DuplicateBroker.into())
    );
    assert_eq!(
        err(&mut c, vec![vec![1, 2], vec![2]]),
        Some(InvalidAssignment::UnevenReplicas.into())
    );
    assert_eq!(err(&mut c, vec![vec![2, 1], vec![1, 2]]), None);
    let t = c.image.topic("m").unwrap();
    assert_eq!(t.assignments[0].replicas, [2, 1]);
    assert_eq!(t.assignments[0].leader, 2);
}

#[test]
fn create_partitions_keeps_the_replication_factor() {
    let mut c = Cluster::alive(&[1, 2, 3]);
    c.create("t", 2, 2).unwrap();
    let inc = |count| ControllerRequest::CreatePartitions {
        topics: vec![PartitionIncrease {
            topic: "t".into(),
            count,
            assignments: None,
        }],
        validate_only: false,
    };
    assert_eq!(
        c.run(inc(5)).0,
        ControllerReply::CreatePartitions(vec![Ok(())])
    );
    let t = c.image.topic("t").unwrap();
    assert_eq!(t.partitions, 5);
    assert!(t.assignments.iter().all(|p| p.replicas.len() == 2));
    assert!(matches!(
        c.run(inc(5)).0,
        ControllerReply::CreatePartitions(ref r) if matches!(r[0], Err(MetadataError::InvalidPartitions(_)))
    ));
    let unknown = ControllerRequest::CreatePartitions {
        topics: vec![PartitionIncrease {
            topic: "nope".into(),
            count: 3,
            assignments: None,
        }],
        validate_only: false,
    };
    assert_eq!(
        c.run(unknown).0,
        ControllerReply::CreatePartitions(vec![Err(MetadataError::UnknownTopicOrPartition)])
    );
}

#[test]
fn alter_configs_writes_only_the_difference_and_delete_removes_the_topic() {
    let mut c = Cluster::alive(&[1]);
    c.create("t", 1, 1).unwrap();
    let alter = |configs: &[(&str, &str)]| ControllerRequest::AlterTopicConfigs {
        topic: "t".into(),
        configs: configs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        validate_only: false,
    };
    assert_eq!(
        c.run(alter(&[("retention.ms", "1000")])),
        (ControllerReply::AlterTopicConfigs(Ok(())), 1)
    );
    assert_eq!(c.run(alter(&[("retention.ms", "1000")])).1, 0);
    assert_eq!(c.run(alter(&[("cleanup.policy", "compact")])).1, 2);
    let t = c.image.topic("t").unwrap();
    assert_eq!(t.configs.len(), 1);
    assert!(matches!(
        c.run(alter(&[("retention.ms", "x")])).0,
        ControllerReply::AlterTopicConfigs(Err(MetadataError::InvalidConfig(_)))
    ));
    let id = c.image.topic("t").unwrap().id;
    let del = ControllerRequest::DeleteTopics {
        names: vec!["t".into(), "t".into(), "u".into()],
    };
    let (reply, n) = c.run(del);
    assert_eq!(n, 1);
    assert_eq!(
        reply,
        ControllerReply::DeleteTopics(vec![
            Ok(id),
            Ok(id),
            Err(MetadataError::UnknownTopicOrPartition)
        ])
    );
    assert!(c.image.topic("t").is_none());
}

#[test]
fn a_broker_that_stops_heartbeating_is_fenced_and_loses_its_leaderships() {
    let mut c = Cluster::alive(&[1, 2, 3]);
    c.create("t", 3, 3).unwrap();
    c.create("solo", 3, 1).unwrap();
    c.now += SESSION + Duration::from_secs(1);
    c.live.beat(2, c.now);
    c.live.beat(3, c.now);
    let recs = expire_sessions(&c.image, &c.live, c.now, &rules());
    c.offset += 1;
    c.image = c.image.apply(c.offset, &recs);
    assert!(!c.image.is_alive(1));
    assert!(c.image.brokers(None).iter().all(|b| b.node_id != 1));
    for p in &c.image.topic("t").unwrap().assignments {
        assert_ne!(p.leader, 1);
        assert!(!p.isr.contains(&1));
    }
    // A partition whose only replica was broker 1 has no leader now: its
    // ISR is empty and 1 waits in the ELR (KIP-966).
    let solo = c.image.topic("solo").unwrap();
    let on_1: Vec<_> = solo
        .assignments
        .iter()
        .filter(|p| p.replicas == [1])
        .collect();
    assert_eq!(on_1.len(), 1);
    assert_eq!(
        (on_1[0].leader, on_1[0].isr.clone(), on_1[0].elr.clone()),
        (NO_LEADER, vec![], vec![1])
    );
    assert!(
        expire_sessions(&c.image, &c.live, c.now, &rules()).is_empty(),
        "fenced once"
    );
    // Broker 1 restarts: registers, heartbeats, leads its partition again.
    c.register(1, 1001, None);
    c.heartbeat(1, false);
    let solo = c.image.topic("solo").unwrap();
    let p = solo.assignments.iter().find(|p| p.replicas == [1]).unwrap();
    assert_eq!(p.leader, 1);
}

#[test]
fn controlled_shutdown_moves_leadership_away() {
    let mut c = Cluster::alive(&[1, 2, 3]);
    c.create("t", 6, 3).unwrap();
    let r = c.heartbeat(2, true);
    assert!(matches!(
        r,
        ControllerReply::BrokerHeartbeat(Ok(HeartbeatReply {
            should_shutdown: true,
            ..
        }))
    ));
    assert!(c
        .image
        .topic("t")
        .unwrap()
        .assignments
        .iter()
        .all(|p| p.leader != 2));
    assert!(c.image.brokers(None).iter().all(|b| b.node_id != 2));
}

#[test]
fn producer_id_blocks_do_not_overlap_and_reservations_move_them_up() {
    let mut c = Cluster::alive(&[1, 2]);
    let alloc = |c: &mut Cluster, b: i32| {
        let epoch = c.image.registrations[&b].epoch;
        match c
            .run(ControllerRequest::AllocateProducerIds {
                broker_id: b,
                broker_epoch: epoch,
            })
            .0
        {
            ControllerReply::ProducerIds(Ok(block)) => block,
            other => panic!("{other:?}"),
        }
    };
    let a = alloc(&mut c, 1);
    let b = alloc(&mut c, 2);
    assert_eq!(
        (a.first, b.first, a.size),
        (0, PRODUCER_ID_BLOCK, PRODUCER_ID_BLOCK)
    );
    c.run(ControllerRequest::ReserveProducerIds {
        next_producer_id: 5000,
    });
    assert_eq!(alloc(&mut c, 1).first, 5000);
    assert_eq!(
        c.run(ControllerRequest::ReserveProducerIds {
            next_producer_id: 10
        })
        .1,
        0
    );
}

#[test]
fn racks_get_one_replica_each() {
    let mut c = Cluster::new();
    for (id, rack) in [(1, "a"), (2, "a"), (3, "b"), (4, "b"), (5, "c"), (6, "c")] {
        c.register(id, id as u128, Some(rack));
        c.heartbeat(id, false);
    }
    c.create("t", 6, 3).unwrap();
    let rack = |id: i32| c.image.registrations[&id].rack.clone();
    for p in &c.image.topic("t").unwrap().assignments {
        let racks: std::collections::BTreeSet<_> = p.replicas.iter().map(|r| rack(*r)).collect();
        assert_eq!(racks.len(), 3, "{:?}", p.replicas);
    }
}

/// Fences `ids` by letting their sessions expire (the others heartbeat).
fn expire(c: &mut Cluster, ids: &[i32]) {
    c.now += SESSION + Duration::from_secs(1);
    for b in c.image.registrations.keys().copied().collect::<Vec<_>>() {
        if !ids.contains(&b) {
            c.live.beat(b, c.now);
        }
    }
    let recs = expire_sessions(&c.image, &c.live, c.now, &rules());
    c.offset += 1;
    c.image = c.image.apply(c.offset, &recs);
}

fn only_partition(c: &Cluster, topic: &str) -> PartitionRegistration {
    c.image.topic(topic).unwrap().assignments[0].clone()
}

#[test]
fn fenced_followers_fill_the_elr_and_an_elr_member_leads_after_the_leader() {
    let mut c = Cluster::alive(&[1, 2, 3]);
    c.create_with("t", 1, 3, &[("min.insync.replicas", "2")])
        .unwrap();
    let p = only_partition(&c, "t");
    let (l, a, b) = (p.replicas[0], p.replicas[1], p.replicas[2]);
    expire(&mut c, &[b]);
    let p = only_partition(&c, "t");
    assert_eq!(
        (p.isr.len(), p.elr.clone()),
        (2, vec![]),
        "still at min ISR"
    );
    expire(&mut c, &[a, b]);
    let p = only_partition(&c, "t");
    assert_eq!(
        (p.isr.clone(), p.elr.clone(), p.leader),
        (vec![l], vec![a], l)
    );
    // The leader goes: nobody alive is eligible, the ISR is empty.
    expire(&mut c, &[l, a, b]);
    let p = only_partition(&c, "t");
    assert_eq!(p.leader, NO_LEADER);
    assert!(p.isr.is_empty());
    let mut elr = p.elr.clone();
    elr.sort_unstable();
    let mut want = vec![l, a];
    want.sort_unstable();
    assert_eq!(elr, want);
    // `b` (out of the ISR while it was at min ISR) comes back: not eligible.
    c.register(b, 100 + b as u128, None);
    c.heartbeat(b, false);
    assert_eq!(only_partition(&c, "t").leader, NO_LEADER);
    // `a` comes back after a clean shutdown: it leads, the ISR is `a`.
    c.register(a, 100 + a as u128, None);
    c.heartbeat(a, false);
    let p = only_partition(&c, "t");
    assert_eq!(
        (p.leader, p.isr.clone(), p.elr.clone()),
        (a, vec![a], vec![l])
    );
    // The old leader comes back after a kill -9: it leaves the ELR.
    c.register_with(l, 100 + l as u128, None, None);
    let p = only_partition(&c, "t");
    assert_eq!((p.elr.clone(), p.last_known_elr.clone()), (vec![], vec![]));
    c.heartbeat(l, false);
    assert_eq!(only_partition(&c, "t").leader, a, "no election needed");
}

#[test]
fn an_unclean_restart_of_the_only_elr_member_keeps_it_as_last_known_leader() {
    let mut c = Cluster::alive(&[1, 2]);
    // One replica: the effective min ISR is 1 (at most the replication
    // factor), the single-node case.
    c.create_with("t", 1, 1, &[("min.insync.replicas", "2")])
        .unwrap();
    let l = only_partition(&c, "t").replicas[0];
    expire(&mut c, &[l]);
    let p = only_partition(&c, "t");
    assert_eq!(
        (p.leader, p.isr.clone(), p.elr.clone()),
        (NO_LEADER, vec![], vec![l])
    );
    // A clean restart keeps the ELR; an unclean one empties it.
    let epoch = c.image.registrations[&l].epoch;
    c.register_with(l, 500, None, Some(epoch));
    assert_eq!(only_partition(&c, "t").elr, vec![l]);
    c.register_with(l, 501, None, Some(epoch));
    let p = only_partition(&c, "t");
    assert_eq!((p.elr.clone(), p.last_known_elr.clone()), (vec![], vec![l]));
    // The last known leader leads once alive (the ISR and ELR are empty).
    c.heartbeat(l, false);
    let p = only_partition(&c, "t");
    assert_eq!(
        (p.leader, p.isr.clone(), p.last_known_elr.clone()),
        (l, vec![l], vec![])
    );
}

#[test]
fn unclean_leader_election_enable_elects_any_alive_replica() {
    let mut c = Cluster::alive(&[1, 2, 3]);
    c.create_with(
        "t",
        1,
        2,
        &[
            ("min.insync.replicas", "2"),
            ("unclean.leader.election.enable", "true"),
        ],
    )
    .unwrap();
    let p = only_partition(&c, "t");
    let (l, f) = (p.replicas[0], p.replicas[1]);
    // The follower leaves the ISR at min ISR... below it: ELR.
    expire(&mut c, &[f]);
    expire(&mut c, &[l, f]);
    assert_eq!(only_partition(&c, "t").leader, NO_LEADER);
    // The follower crashed: out of the ELR, but unclean elections take it.
    c.register_with(f, 700, None, None);
    c.heartbeat(f, false);
    let p = only_partition(&c, "t");
    assert_eq!(
        (p.leader, p.isr.clone(), p.elr.clone()),
        (f, vec![f], vec![])
    );
}

#[test]
fn a_leader_shrink_below_min_isr_fills_the_elr_and_an_expansion_empties_it() {
    let mut c = Cluster::alive(&[1, 2, 3]);
    c.create_with("t", 1, 3, &[("min.insync.replicas", "3")])
        .unwrap();
    let p = only_partition(&c, "t");
    let t = c.image.topic("t").unwrap().id;
    let l = p.leader;
    let ask = |c: &Cluster, isr: Vec<i32>| {
        let p = only_partition(c, "t");
        ControllerRequest::AlterPartition(crate::cluster::alter_partition::IsrAsk {
            broker: l,
            broker_epoch: c.image.registrations[&l].epoch,
            topic_id: t,
            partition: 0,
            leader_epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            new_isr: isr,
        })
    };
    let (a, b) = (p.replicas[1], p.replicas[2]);
    let r = ask(&c, vec![l, a]);
    c.run(r);
    let p = only_partition(&c, "t");
    assert_eq!((p.isr.len(), p.elr.clone()), (2, vec![b]));
    let r = ask(&c, vec![l]);
    c.run(r);
    let p = only_partition(&c, "t");
    assert_eq!((p.isr.clone(), p.elr.len()), (vec![l], 2));
    let r = ask(&c, vec![l, b]);
    c.run(r);
    assert_eq!(only_partition(&c, "t").elr, vec![a], "b rejoined");
    let r = ask(&c, vec![l, a, b]);
    c.run(r);
    let p = only_partition(&c, "t");
    assert_eq!((p.isr.len(), p.elr.clone()), (3, vec![]));
    assert_eq!(p.leader, l);
}

#[test]
fn lowering_min_isr_to_the_isr_clears_the_elr_and_unclean_elects() {
    let mut c = Cluster::alive(&[1, 2, 3]);
    c.create_with("t", 1, 3, &[("min.insync.replicas", "3")])
        .unwrap();
    let p = only_partition(&c, "t");
    let (l, b) = (p.replicas[0], p.replicas[2]);
    expire(&mut c, &[b]);
    assert_eq!(only_partition(&c, "t").elr, vec![b]);
    let alter = |c: &mut Cluster, configs: &[(&str, &str)]| {
        let req = ControllerRequest::AlterTopicConfigs {
            topic: "t".into(),
            configs: configs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            validate_only: false,
        };
        c.run(req).0
    };
    alter(&mut c, &[("min.insync.replicas", "2")]);
    let p = only_partition(&c, "t");
    assert_eq!((p.elr.clone(), p.leader), (vec![], l));
    // Every replica fenced: no leader. `b` (out of the ISR and ELR) comes
    // back after a crash: not eligible, until unclean elections are on.
    expire(&mut c, &[1, 2, 3]);
    assert_eq!(only_partition(&c, "t").leader, NO_LEADER);
    c.register_with(b, 900, None, None);
    c.heartbeat(b, false);
    assert_eq!(
        only_partition(&c, "t").leader,
        NO_LEADER,
        "{:?}",
        only_partition(&c, "t")
    );
    alter(
        &mut c,
        &[
            ("min.insync.replicas", "2"),
            ("unclean.leader.election.enable", "true"),
        ],
    );
    let p = only_partition(&c, "t");
    assert_eq!((p.leader, p.isr.clone()), (b, vec![b]));
}
