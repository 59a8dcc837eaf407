//! Share-partition state survives a broker restart (KIP-932): the same
//! scenario with raw frames on Fjord and on Apache Kafka 4.4 (one node
//! each). A member acknowledges some records (Accept), rejects one and
//! leaves the rest acquired; after the restart a new fetch gets only the
//! records left acquired, delivered again with delivery count 2 (the
//! accepted and rejected ones never again, the share-partition start
//! offset kept), and records produced after them with count 1. On a
//! 3-node Fjord cluster the same holds when the partition's leader is
//! killed with SIGKILL: its successor continues from the persisted state.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
// Not every helper of the shared frames is used here.
#[path = "share_fetch/cluster.rs"]
mod cluster;
#[allow(dead_code)]
#[path = "share_fetch/wire.rs"]
mod wire;

use std::process::Command;
use std::time::{Duration, Instant};

use cluster::*;
use common::cluster::Cluster;
use common::layout::wait_topic;
use common::raw::RawConn as Conn;
use common::*;
use kafka_protocol::messages::*;
use uuid::Uuid;
use wire::*;

const ACCEPT: i8 = 1;
const REJECT: i8 = 3;

/// A member's share session on partition 0 of one topic.
struct Session {
    c: Conn,
    group: String,
    member: String,
    epoch: i32,
    topic_id: Uuid,
}

impl Session {
    fn open(t: &Target, group: &str, topic: &str, topic_id: Uuid) -> Session {
        let member = join(t, group, &[topic]);
        Session {
            c: Conn::new(&t.addr),
            group: group.to_string(),
            member,
            epoch: 0,
            topic_id,
        }
    }

    fn fetch(&mut self, acks: &Acks, max_wait_ms: i32) -> ShareFetchResponse {
        let req = share_fetch_req(
            &self.group,
            &self.member,
            self.epoch,
            self.topic_id,
            0,
            acks,
            max_wait_ms,
            100,
        );
        let r = self.c.call(1, &req);
        assert_eq!(r.error_code, 0, "ShareFetch at epoch {}: {r:?}", self.epoch);
        self.epoch += 1;
        r
    }

    /// Fetches (long polls of 1 s) until something is acquired.
    fn fetch_some(&mut self, limit: Duration) -> Vec<(i64, i64, i16)> {
        let deadline = Instant::now() + limit;
        loop {
            let r = self.fetch(&vec![], 1000);
            let got = acquired(&r, self.topic_id, 0);
            if !got.is_empty() {
                return got;
            }
            assert!(Instant::now() < deadline, "nothing acquired in {limit:?}");
        }
    }

    /// A ShareAcknowledge of partition 0; gives its error code.
    fn ack(&mut self, acks: &Acks) -> i16 {
        let req = share_ack_req(
            &self.group,
            &self.member,
            self.epoch,
            self.topic_id,
            0,
            acks,
        );
        let r = self.c.call(1, &req);
        assert_eq!(r.error_code, 0, "ShareAcknowledge: {r:?}");
        self.epoch += 1;
        r.responses[0].partitions[0].error_code
    }
}

/// Before the restart: six records, 0–1 accepted, 2 rejected, 3–5 left
/// acquired. Gives the topic id.
fn before(t: &Target, topic: &str, group: &str) -> Uuid {
    let tid = create_topic(&t.addr, topic, 1);
    let mut s = Session::open(t, group, topic, tid);
    // The opening fetch: the share-partition starts at the log end.
    let r = s.fetch(&vec![], 200);
    assert!(acquired(&r, tid, 0).is_empty(), "{r:?}");
    produce(&t.addr, topic, 0, &["a", "b", "c", "d", "e", "f"]);
    assert_eq!(s.fetch_some(Duration::from_secs(20)), vec![(0, 5, 1)]);
    assert_eq!(s.ack(&vec![(0, 1, ACCEPT), (2, 2, REJECT)]), 0);
    tid
}

/// After the restart: only 3–5 come back (delivery count 2); once they
/// are accepted, a new record comes with count 1.
fn after(t: &Target, topic: &str, group: &str, tid: Uuid) {
    let mut s = Session::open(t, group, topic, tid);
    assert_eq!(
        s.fetch_some(Duration::from_secs(30)),
        vec![(3, 5, 2)],
        "{}: the records left acquired are delivered again, nothing else",
        t.addr
    );
    let r = s.fetch(&vec![(3, 5, ACCEPT)], 200);
    assert!(acquired(&r, tid, 0).is_empty(), "{r:?}");
    produce(&t.addr, topic, 0, &["g"]);
    assert_eq!(s.fetch_some(Duration::from_secs(20)), vec![(6, 6, 1)]);
}

#[test]
fn share_state_survives_a_restart_on_fjord() {
    let mut b = Broker::start();
    enable_share(&b.bootstrap());
    let t = Target {
        addr: b.bootstrap(),
    };
    let tid = before(&t, "persist-t", "persist-g");
    b.restart_same_port();
    let t = Target {
        addr: b.bootstrap(),
    };
    after(&t, "persist-t", "persist-g", tid);
}

#[test]
fn share_state_survives_a_restart_on_kafka() {
    let Some((peer, t)) = kafka_target(&[]) else {
        return;
    };
    let tid = before(&t, "persist-t", "persist-g");
    let out =
        Command::new(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/peers/kafka"))
            .arg("restart")
            .env("KAFKA_PEER_HOME", peer.home())
            .output()
            .expect("run scripts/peers/kafka restart");
    assert!(
        out.status.success(),
        "Kafka did not restart: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    after(&t, "persist-t", "persist-g", tid);
}

/// Joins `group` (reading `topic`) through its coordinator among `nodes`
/// until the member is assigned a partition; gives the member id.
fn join_on(c: &Cluster, nodes: &[i32], group: &str, topic: &str) -> String {
    let member = Uuid::new_v4().to_string();
    let mut epoch = 0;
    poll_until(CLUSTER_DEADLINE, "a share-group assignment", || {
        let f = ask(
            c,
            nodes[0],
            4,
            &FindCoordinatorRequest::default()
                .with_key_type(0)
                .with_coordinator_keys(vec![s(group)]),
        )?;
        let found = f.coordinators.first().ok_or("no coordinator answered")?;
        if found.error_code != 0 || !nodes.contains(&found.node_id.0) {
            return Err(format!("FindCoordinator: {found:?}"));
        }
        let req = ShareGroupHeartbeatRequest::default()
            .with_group_id(s(group).into())
            .with_member_id(s(&member))
            .with_member_epoch(epoch)
            .with_subscribed_topic_names((epoch == 0).then(|| vec![s(topic).into()]));
        let r = ask(c, found.node_id.0, 1, &req)?;
        if r.error_code != 0 {
            return Err(format!("ShareGroupHeartbeat: {}", r.error_code));
        }
        epoch = r.member_epoch;
        match r.assignment {
            Some(a) if !a.topic_partitions.is_empty() => Ok(member.clone()),
            _ => Err("no partition assigned yet".into()),
        }
    })
}

/// Fetches partition 0 from `leader` as `member` (a new share session)
/// until records are acquired; gives the acquired runs.
fn fetch_on(
    c: &Cluster,
    leader: i32,
    group: &str,
    member: &str,
    tid: Uuid,
) -> Vec<(i64, i64, i16)> {
    let mut epoch = 0;
    poll_until(CLUSTER_DEADLINE, "records acquired", || {
        let req = share_fetch_req(group, member, epoch, tid, 0, &vec![], 1000, 100);
        let r = ask(c, leader, 1, &req)?;
        if r.error_code != 0 {
            epoch = 0;
            return Err(format!("ShareFetch: {}", r.error_code));
        }
        epoch += 1;
        let p = r
            .responses
            .iter()
            .flat_map(|t| t.partitions.iter())
            .find(|p| p.partition_index == 0)
            .ok_or("partition 0 not answered")?;
        if p.error_code != 0 {
            epoch = 0;
            return Err(format!("ShareFetch partition: {}", p.error_code));
        }
        let got: Vec<_> = p
            .acquired_records
            .iter()
            .map(|a| (a.first_offset, a.last_offset, a.delivery_count))
            .collect();
        if got.is_empty() {
            Err("nothing acquired".into())
        } else {
            Ok(got)
        }
    })
}

/// The broker leading the `__share_group_state` partition of (`group`,
/// `tid`, 0), as FindCoordinator key type 2 names it (which creates the
/// topic first).
fn state_coordinator(c: &Cluster, asked: i32, group: &str, tid: Uuid) -> i32 {
    use base64::Engine;
    let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(tid.as_bytes());
    coordinator_of(c, asked, 2, &format!("{group}:{id}:0"))
}

/// A 3-node Fjord cluster (the Kafka peer is one node): the leader of the
/// topic partition is killed with SIGKILL after acknowledgements; the new
/// leader reads the persisted state (through the share coordinator of
/// whichever broker leads its state partition) and delivers again only the
/// records left acquired, with delivery count 2.
#[test]
fn share_state_survives_the_partition_leader_killed() {
    let mut c = Cluster::start(3, &["share.coordinator.state.topic.num.partitions=4"]);
    let any = c.ids()[0];
    enable_share(&c.bootstrap(any));
    let topic = "failover-t";
    let tid = create_rf3(&c, any, topic, 1);
    let leader = wait_topic(&c, &c.ids(), topic, 1).parts[&0].leader;
    // A group whose share-partition state another broker coordinates, so
    // the leader's reads and writes go there as inter-broker calls.
    let group = &(0..64)
        .map(|i| format!("failover-g{i}"))
        .find(|g| state_coordinator(&c, any, g, tid) != leader)
        .expect("a group coordinated by another broker");
    let member = join_on(&c, &c.ids(), group, topic);
    // The opening fetch creates the share-partition at the log end.
    let open = share_fetch_req(group, &member, 0, tid, 0, &vec![], 200, 100);
    assert_eq!(ask(&c, leader, 1, &open).unwrap().error_code, 0);
    produce(
        &c.bootstrap(leader),
        topic,
        0,
        &["a", "b", "c", "d", "e", "f"],
    );
    let mut s1 = Session {
        c: Conn::new(&c.bootstrap(leader)),
        group: group.to_string(),
        member: member.clone(),
        epoch: 0,
        topic_id: tid,
    };
    assert_eq!(s1.fetch_some(Duration::from_secs(20)), vec![(0, 5, 1)]);
    assert_eq!(s1.ack(&vec![(0, 1, ACCEPT), (2, 2, REJECT)]), 0);
    drop(s1);

    c.kill9(leader);
    let survivors: Vec<i32> = c.ids().into_iter().filter(|&i| i != leader).collect();
    let moved = poll_until(CLUSTER_DEADLINE, "a new partition leader", || {
        let l = wait_topic(&c, &survivors, topic, 1).parts[&0].leader;
        if survivors.contains(&l) {
            Ok(l)
        } else {
            Err(format!("leader still {l}"))
        }
    });
    let member = join_on(&c, &survivors, group, topic);
    assert_eq!(
        fetch_on(&c, moved, group, &member, tid),
        vec![(3, 5, 2)],
        "node {moved} continues from the persisted state"
    );
}
