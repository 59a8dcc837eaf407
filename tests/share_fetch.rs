//! ShareFetch v1 and ShareAcknowledge v1 (KIP-932) with raw frames, the
//! same cases on Fjord (share.version=1 finalized with UpdateFeatures) and
//! on Apache Kafka 4.4: acquisition with delivery counts, acknowledgements
//! (Accept, Release, Reject) piggybacked on ShareFetch and in
//! ShareAcknowledge, two members splitting one partition, the
//! delivery-count limit, share sessions (open, close releases, wrong
//! epoch, unknown session, forgotten partitions, another connection, the
//! opening connection's close), a transaction marker, unknown topics and
//! partitions, a non-leader, lock expiry and authorization. The raw
//! frames are in `share_fetch/wire.rs`.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
#[path = "share_fetch/wire.rs"]
mod wire;

use std::time::{Duration, Instant};

use common::kafka_peer::KafkaPeer;
use common::raw::RawConn as Conn;
use common::*;
use kafka_protocol::messages::*;
use uuid::Uuid;
use wire::*;

const UNSUPPORTED_VERSION: i16 = 35;
const INVALID_RECORD_STATE: i16 = 121;
const SHARE_SESSION_NOT_FOUND: i16 = 122;
const INVALID_SHARE_SESSION_EPOCH: i16 = 123;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;

const GAP: i8 = 0;
const ACCEPT: i8 = 1;
const RELEASE: i8 = 2;
const REJECT: i8 = 3;

/// The partition's (error code, acknowledge error code) in a ShareFetch
/// answer.
fn codes_of(r: &ShareFetchResponse, topic_id: Uuid, partition: i32) -> Option<(i16, i16)> {
    r.responses
        .iter()
        .filter(|t| t.topic_id == topic_id)
        .flat_map(|t| t.partitions.iter())
        .find(|p| p.partition_index == partition)
        .map(|p| (p.error_code, p.acknowledge_error_code))
}

/// A topic and a member joined to a new group reading it, with its session
/// opened (the share-partition starts at the log end: `latest`).
fn setup(t: &Target, name: &str) -> (Uuid, Session) {
    let topic = format!("{name}-t");
    let group = format!("{name}-g");
    let tid = create_topic(&t.addr, &topic, 1);
    let member = join(t, &group, &[&topic]);
    let mut s = Session::new(t, &group, &member);
    let r = s.fetch(tid, 0, &vec![], 200, 100);
    assert_eq!(codes_of(&r, tid, 0), Some((0, 0)), "{r:?}");
    assert_eq!(r.acquisition_lock_timeout_ms, 30_000);
    (tid, s)
}

fn case_acquire_accept(t: &Target, name: &str) {
    let (tid, mut s) = setup(t, name);
    let topic = format!("{name}-t");
    produce(&t.addr, &topic, 0, &["a", "b", "c"]);
    let r = s.fetch(tid, 0, &vec![], 5000, 100);
    assert_eq!(acquired(&r, tid, 0), vec![(0, 2, 1)], "{name}");
    let records = &r.responses[0].partitions[0].records;
    assert!(
        records.as_ref().is_some_and(|b| !b.is_empty()),
        "{name}: the batch is sent"
    );
    // Accept piggybacked on the next fetch: nothing is left to acquire.
    let r = s.fetch(tid, 0, &vec![(0, 2, ACCEPT)], 300, 100);
    assert_eq!(codes_of(&r, tid, 0), Some((0, 0)), "{name}: {r:?}");
    assert!(acquired(&r, tid, 0).is_empty(), "{name}");
    // New records after the accepted ones.
    produce(&t.addr, &topic, 0, &["d"]);
    assert_eq!(
        s.fetch_some(tid, 0, 100, Duration::from_secs(20)),
        vec![(3, 3, 1)],
        "{name}"
    );
    // A topic id that names no topic, a partition the topic does not have.
    s.epoch = 0;
    let unknown = Uuid::new_v4();
    let r = s.fetch(unknown, 0, &vec![], 0, 100);
    assert_eq!(
        codes_of(&r, unknown, 0).map(|c| c.0),
        Some(100),
        "{name}: {r:?}"
    );
    let r = s.fetch(tid, 5, &vec![], 0, 100);
    assert_eq!(codes_of(&r, tid, 5).map(|c| c.0), Some(3), "{name}: {r:?}");
}

fn case_release_reject(t: &Target, name: &str) {
    let (tid, mut s) = setup(t, name);
    produce(&t.addr, &format!("{name}-t"), 0, &["x", "y"]);
    assert_eq!(
        s.fetch_some(tid, 0, 100, Duration::from_secs(20)),
        vec![(0, 1, 1)]
    );
    assert_eq!(
        s.ack(tid, 0, &vec![(0, 0, RELEASE), (1, 1, REJECT)]),
        0,
        "{name}"
    );
    // The released record comes back with delivery count 2; the rejected never.
    assert_eq!(
        s.fetch_some(tid, 0, 100, Duration::from_secs(20)),
        vec![(0, 0, 2)],
        "{name}"
    );
    let r = s.fetch(tid, 0, &vec![(0, 0, ACCEPT)], 300, 100);
    assert_eq!(codes_of(&r, tid, 0).map(|c| c.1), Some(0), "{name}: {r:?}");
    assert!(acquired(&r, tid, 0).is_empty(), "{name}: {r:?}");
}

fn case_two_members(t: &Target, name: &str) {
    let topic = format!("{name}-t");
    let group = format!("{name}-g");
    let tid = create_topic(&t.addr, &topic, 1);
    let a = join(t, &group, &[&topic]);
    let b = join(t, &group, &[&topic]);
    let mut sa = Session::new(t, &group, &a);
    let mut sb = Session::new(t, &group, &b);
    sa.fetch(tid, 0, &vec![], 200, 3);
    sb.fetch(tid, 0, &vec![], 200, 3);
    produce(&t.addr, &topic, 0, &["1", "2", "3", "4", "5"]);
    produce(&t.addr, &topic, 0, &["6", "7", "8", "9", "10"]);
    // MaxRecords 3: whole batches until at least 3 records are acquired.
    let got_a = sa.fetch_some(tid, 0, 3, Duration::from_secs(20));
    let got_b = sb.fetch_some(tid, 0, 3, Duration::from_secs(20));
    let mut all: Vec<i64> = got_a
        .iter()
        .chain(&got_b)
        .flat_map(|(f, l, c)| {
            assert_eq!(*c, 1, "{name}");
            *f..=*l
        })
        .collect();
    all.sort();
    assert_eq!(
        all,
        (0..10).collect::<Vec<_>>(),
        "{name}: {got_a:?} {got_b:?}"
    );
    // b may not acknowledge what a holds.
    let (f, _, _) = got_a[0];
    assert_eq!(
        sb.ack(tid, 0, &vec![(f, f, ACCEPT)]),
        INVALID_RECORD_STATE,
        "{name}"
    );
    assert_eq!(sa.ack(tid, 0, &vec![(f, f, ACCEPT)]), 0, "{name}");
}

fn case_delivery_limit(t: &Target, name: &str) {
    let (tid, mut s) = setup(t, name);
    produce(&t.addr, &format!("{name}-t"), 0, &["once"]);
    for count in 1..=5 {
        let got = s.fetch_some(tid, 0, 100, Duration::from_secs(20));
        assert_eq!(got, vec![(0, 0, count)], "{name}");
        assert_eq!(s.ack(tid, 0, &vec![(0, 0, RELEASE)]), 0, "{name}");
    }
    // Released at the limit (5 deliveries): archived, never delivered again.
    let r = s.fetch(tid, 0, &vec![], 500, 100);
    assert!(acquired(&r, tid, 0).is_empty(), "{name}: {r:?}");
}

fn case_sessions(t: &Target, name: &str) {
    let (tid, mut s) = setup(t, name);
    produce(&t.addr, &format!("{name}-t"), 0, &["p", "q"]);
    assert_eq!(
        s.fetch_some(tid, 0, 100, Duration::from_secs(20)),
        vec![(0, 1, 1)]
    );
    // A wrong epoch.
    let r = s.c.call(
        1,
        &share_fetch_req(&s.group, &s.member, s.epoch + 5, tid, 0, &vec![], 0, 100),
    );
    assert_eq!(r.error_code, INVALID_SHARE_SESSION_EPOCH, "{name}");
    // ShareAcknowledge cannot open a session.
    let r = s.c.call(
        1,
        &share_ack_req(&s.group, &s.member, 0, tid, 0, &vec![(0, 0, ACCEPT)]),
    );
    assert_eq!(r.error_code, INVALID_SHARE_SESSION_EPOCH, "{name}");
    // The session is the member's, not the connection's.
    let mut other = Conn::new(&t.addr);
    let r = other.call(
        1,
        &share_ack_req(&s.group, &s.member, s.epoch, tid, 0, &vec![(0, 0, ACCEPT)]),
    );
    assert_eq!(r.error_code, 0, "{name}: {r:?}");
    assert_eq!(r.responses[0].partitions[0].error_code, 0, "{name}");
    s.epoch += 1;
    // Closing the session (-1) releases what the member holds (offset 1).
    let r =
        s.c.call(1, &share_ack_req(&s.group, &s.member, -1, tid, 0, &vec![]));
    assert_eq!(r.error_code, 0, "{name}: {r:?}");
    let r = s.c.call(
        1,
        &share_fetch_req(&s.group, &s.member, 1, tid, 0, &vec![], 0, 100),
    );
    assert_eq!(r.error_code, SHARE_SESSION_NOT_FOUND, "{name}");
    s.epoch = 0;
    assert_eq!(
        s.fetch_some(tid, 0, 100, Duration::from_secs(20)),
        vec![(1, 1, 2)],
        "{name}"
    );
}

fn case_forgotten(t: &Target, name: &str) {
    let (t1, t2) = (format!("{name}-a"), format!("{name}-b"));
    let group = format!("{name}-g");
    let id1 = create_topic(&t.addr, &t1, 1);
    let id2 = create_topic(&t.addr, &t2, 1);
    let member = join(t, &group, &[&t1, &t2]);
    let mut ss = Session::new(t, &group, &member);
    // Open with both partitions.
    let mut req = share_fetch_req(&group, &member, 0, id1, 0, &vec![], 200, 100);
    req.topics.push(
        share_fetch_request::FetchTopic::default()
            .with_topic_id(id2)
            .with_partitions(vec![share_fetch_request::FetchPartition::default()
                .with_partition_index(0)
                .with_partition_max_bytes(1 << 20)]),
    );
    let r = ss.c.call(1, &req);
    assert_eq!(r.error_code, 0);
    assert_eq!(
        r.responses.len(),
        2,
        "{name}: both partitions answered: {r:?}"
    );
    ss.epoch = 1;
    produce(&t.addr, &t1, 0, &["one"]);
    produce(&t.addr, &t2, 0, &["two"]);
    // Forget the second: only the first is read from now on.
    let mut req = ShareFetchRequest::default()
        .with_group_id(Some(s(&group).into()))
        .with_member_id(Some(s(&member)))
        .with_share_session_epoch(1)
        .with_max_wait_ms(3000)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_max_records(100)
        .with_batch_size(100);
    req.forgotten_topics_data = vec![share_fetch_request::ForgottenTopic::default()
        .with_topic_id(id2)
        .with_partitions(vec![0])];
    let r = ss.c.call(1, &req);
    assert_eq!(r.error_code, 0);
    assert!(
        r.responses.iter().all(|x| x.topic_id != id2),
        "{name}: {r:?}"
    );
    assert_eq!(acquired(&r, id1, 0), vec![(0, 0, 1)], "{name}: {r:?}");
}

/// Sets the group config `share.record.lock.duration.ms`.
fn set_lock_duration(addr: &str, group: &str, ms: i64) {
    set_group_configs(
        addr,
        group,
        &[("share.record.lock.duration.ms", &ms.to_string())],
    );
}

/// An acquisition lock that expires makes its records available again
/// with the next delivery count (a 1000 ms group lock on both brokers).
fn case_lock_expiry(t: &Target, name: &str) {
    let topic = format!("{name}-t");
    let group = format!("{name}-g");
    let tid = create_topic(&t.addr, &topic, 1);
    set_lock_duration(&t.addr, &group, 1000);
    let member = join(t, &group, &[&topic]);
    let mut s = Session::new(t, &group, &member);
    s.fetch(tid, 0, &vec![], 200, 100);
    produce(&t.addr, &topic, 0, &["late"]);
    assert_eq!(
        s.fetch_some(tid, 0, 100, Duration::from_secs(20)),
        vec![(0, 0, 1)]
    );
    // Not acknowledged: delivered again once the lock expires.
    assert_eq!(
        s.fetch_some(tid, 0, 100, Duration::from_secs(60)),
        vec![(0, 0, 2)],
        "{name}"
    );
}

/// The connection that opened a session closing closes it (and releases
/// what its member holds), as Kafka 4.4 does.
fn case_disconnect(t: &Target, name: &str) {
    let (tid, mut s) = setup(t, name);
    produce(&t.addr, &format!("{name}-t"), 0, &["u", "v"]);
    assert_eq!(
        s.fetch_some(tid, 0, 100, Duration::from_secs(20)),
        vec![(0, 1, 1)]
    );
    let (group, member, mut epoch) = (s.group.clone(), s.member.clone(), s.epoch);
    drop(s);
    // The broker notices the close on its own time: ask until the session
    // is gone (each answer while it lives moves its epoch on).
    let mut c = Conn::new(&t.addr);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = c.call(1, &share_ack_req(&group, &member, epoch, tid, 0, &vec![]));
        if r.error_code == SHARE_SESSION_NOT_FOUND {
            break;
        }
        assert_eq!(r.error_code, 0, "{name}: {r:?}");
        assert!(
            Instant::now() < deadline,
            "{name}: the session outlived its connection"
        );
        epoch += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut again = Session::new(t, &group, &member);
    assert_eq!(
        again.fetch_some(tid, 0, 100, Duration::from_secs(60)),
        vec![(0, 1, 2)],
        "{name}"
    );
}

/// A committed transaction's marker (a control batch) is acquired like a
/// record, as Kafka 4.4 does; the consumer acknowledges its offset as Gap.
fn case_control_batch(t: &Target, name: &str) {
    let (tid, mut ss) = setup(t, name);
    let topic = format!("{name}-t");
    let txn = format!("{name}-txn");
    let mut tx = RawTxn::begin(&t.addr, &txn, &topic);
    tx.produce(&["t1", "t2"]);
    // The marker (offset 2) is in the log before the next record (3).
    tx.end(true, 3);
    assert_eq!(produce(&t.addr, &topic, 0, &["after"]), 3);
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !got.iter().any(|(_, l, _)| *l >= 3) {
        got.extend(ss.fetch_some(tid, 0, 100, Duration::from_secs(20)));
        assert!(Instant::now() < deadline, "{name}: {got:?}");
    }
    let offsets: Vec<i64> = got.iter().flat_map(|(f, l, _)| *f..=*l).collect();
    assert_eq!(offsets, vec![0, 1, 2, 3], "{name}: {got:?}");
    assert!(got.iter().all(|(_, _, c)| *c == 1), "{name}: {got:?}");
    let acks = vec![(0, 1, ACCEPT), (2, 2, GAP), (3, 3, ACCEPT)];
    assert_eq!(ss.ack(tid, 0, &acks), 0, "{name}");
}

/// A ShareFetch at epoch -1 acknowledges, releases the rest of what the
/// member holds and closes the session, acquiring nothing.
fn case_final_fetch(t: &Target, name: &str) {
    let (tid, mut ss) = setup(t, name);
    produce(&t.addr, &format!("{name}-t"), 0, &["a", "b"]);
    assert_eq!(
        ss.fetch_some(tid, 0, 100, Duration::from_secs(20)),
        vec![(0, 1, 1)]
    );
    let close = share_fetch_req(
        &ss.group,
        &ss.member,
        -1,
        tid,
        0,
        &vec![(0, 0, ACCEPT)],
        0,
        100,
    );
    let r = ss.c.call(1, &close);
    assert_eq!(r.error_code, 0, "{name}: {r:?}");
    assert_eq!(codes_of(&r, tid, 0), Some((0, 0)), "{name}: {r:?}");
    assert!(acquired(&r, tid, 0).is_empty(), "{name}: {r:?}");
    let r = ss.c.call(1, &close);
    assert_eq!(r.error_code, SHARE_SESSION_NOT_FOUND, "{name}: {r:?}");
    ss.epoch = 0;
    assert_eq!(
        ss.fetch_some(tid, 0, 100, Duration::from_secs(20)),
        vec![(1, 1, 2)],
        "{name}"
    );
}

/// Downgrading `share.version` to 0 stops both APIs (UNSUPPORTED_VERSION);
/// ApiVersions still lists them, as Kafka 4.4 does. Run last.
fn case_downgrade(t: &Target) {
    let mut c = Conn::new(&t.addr);
    let req = UpdateFeaturesRequest::default()
        .with_timeout_ms(30_000)
        .with_feature_updates(vec![update_features_request::FeatureUpdateKey::default()
            .with_feature(s("share.version"))
            .with_max_version_level(0)
            .with_upgrade_type(2)]);
    let r = c.call(1, &req);
    assert_eq!(r.error_code, 0, "{r:?}");
    let fetch = share_fetch_req("gate-g", "m", 0, Uuid::new_v4(), 0, &vec![], 0, 1);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = c.call(1, &fetch);
        if r.error_code == UNSUPPORTED_VERSION {
            break;
        }
        assert!(Instant::now() < deadline, "still served: {r:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let r = c.call(
        1,
        &share_ack_req("gate-g", "m", 1, Uuid::new_v4(), 0, &vec![]),
    );
    assert_eq!(r.error_code, UNSUPPORTED_VERSION);
    let v = c.call(
        3,
        &ApiVersionsRequest::default()
            .with_client_software_name(s("fjord-share-test"))
            .with_client_software_version(s("1")),
    );
    // Kafka 4.4 lists them whatever the feature's level.
    assert!(
        v.api_keys
            .iter()
            .any(|k| k.api_key == 78 && k.min_version == 1),
        "ShareFetch listed"
    );
}

/// What each target runs, in order.
/// The group's configs set before its first fetch: `share.auto.offset.reset`
/// = earliest starts at the log start (records produced before are
/// delivered) and `share.record.lock.duration.ms` is the lock the fetch
/// answers with.
fn case_group_configs(t: &Target, name: &str) {
    let topic = format!("{name}-t");
    let group = format!("{name}-g");
    let tid = create_topic(&t.addr, &topic, 1);
    produce(&t.addr, &topic, 0, &["early-1", "early-2"]);
    set_group_configs(&t.addr, &group, &[("share.auto.offset.reset", "earliest")]);
    set_lock_duration(&t.addr, &group, 20_000);
    let member = join(t, &group, &[&topic]);
    let mut s = Session::new(t, &group, &member);
    let deadline = Instant::now() + Duration::from_secs(20);
    let r = loop {
        let r = s.fetch(tid, 0, &vec![], 2000, 100);
        if !acquired(&r, tid, 0).is_empty() {
            break r;
        }
        assert!(Instant::now() < deadline, "{name}: nothing acquired");
    };
    assert_eq!(acquired(&r, tid, 0), vec![(0, 1, 1)], "{name}: {r:?}");
    assert_eq!(r.acquisition_lock_timeout_ms, 20_000, "{name}");
}

fn run_cases(t: &Target, tag: &str) {
    case_group_configs(t, &format!("{tag}-configs"));
    case_acquire_accept(t, &format!("{tag}-accept"));
    case_release_reject(t, &format!("{tag}-release"));
    case_two_members(t, &format!("{tag}-two"));
    case_delivery_limit(t, &format!("{tag}-limit"));
    case_sessions(t, &format!("{tag}-sessions"));
    case_forgotten(t, &format!("{tag}-forgotten"));
    case_disconnect(t, &format!("{tag}-disconnect"));
    case_final_fetch(t, &format!("{tag}-final"));
    case_control_batch(t, &format!("{tag}-control"));
}

#[test]
fn share_fetch_on_fjord() {
    let b = Broker::start();
    let t = Target {
        addr: b.bootstrap(),
    };
    // A new cluster finalizes share.version 2 (a no-op here).
    enable_share(&t.addr);
    let mut c = Conn::new(&t.addr);
    // Every shard serves it once it applied the image with the feature.
    wait_for(Duration::from_secs(10), "ShareFetch served", || {
        let r = c.call(
            1,
            &share_fetch_req("g", "m", 0, Uuid::new_v4(), 0, &vec![], 0, 1),
        );
        r.error_code != UNSUPPORTED_VERSION
    });
    run_cases(&t, "f");
    case_downgrade(&t);
}

#[test]
fn share_fetch_on_kafka() {
    let Some((_peer, t)) = kafka_target(&["group.share.min.record.lock.duration.ms=1000"]) else {
        return;
    };
    run_cases(&t, "k");
    case_lock_expiry(&t, "k-expiry");
    case_downgrade(&t);
}

/// Lock expiry on Fjord (a broker of its own, allowing a 1000 ms group
/// lock as the Kafka peer does).
#[test]
fn share_lock_expiry_on_fjord() {
    let b = Broker::start_with(&["group.share.min.record.lock.duration.ms=1000"]);
    enable_share(&b.bootstrap());
    let t = Target {
        addr: b.bootstrap(),
    };
    case_lock_expiry(&t, "f-expiry");
}

/// A ShareFetch sent to a broker that does not lead the partition:
/// NOT_LEADER_OR_FOLLOWER with the current leader and its endpoint (Fjord
/// only: the Kafka peer is a single node).
#[test]
fn share_fetch_on_a_follower() {
    let cluster = common::cluster::Cluster::start(2, &[]);
    let any = cluster.bootstrap(cluster.ids()[0]);
    enable_share(&any);
    let tid = create_topic(&any, "nl", 1);
    let mut c = Conn::new(&any);
    let m = c.call(
        12,
        &MetadataRequest::default().with_topics(Some(vec![
            metadata_request::MetadataRequestTopic::default().with_name(Some(s("nl").into())),
        ])),
    );
    let leader = m.topics[0].partitions[0].leader_id.0;
    let other = *cluster.ids().iter().find(|i| **i != leader).unwrap();
    let mut c = Conn::new(&cluster.bootstrap(other));
    let mut r = c.call(1, &share_fetch_req("nl-g", "m", 0, tid, 0, &vec![], 0, 10));
    // The image with the topic may reach the other broker a little later.
    let deadline = Instant::now() + Duration::from_secs(10);
    while codes_of(&r, tid, 0).map(|x| x.0) != Some(NOT_LEADER_OR_FOLLOWER)
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(100));
        r = c.call(1, &share_fetch_req("nl-g", "m", 0, tid, 0, &vec![], 0, 10));
    }
    assert_eq!(
        codes_of(&r, tid, 0),
        Some((NOT_LEADER_OR_FOLLOWER, 0)),
        "{r:?}"
    );
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.current_leader.leader_id, leader);
    assert!(
        r.node_endpoints.iter().any(|e| e.node_id.0 == leader),
        "{r:?}"
    );
}

const JAAS: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";"#;
const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// READ on `group` (resource type 3) or on `topic` (2) for `User:alice`.
fn allow_read(admin: &mut Conn, resource_type: i8, name: &str) {
    let req = CreateAclsRequest::default().with_creations(vec![
        create_acls_request::AclCreation::default()
            .with_resource_type(resource_type)
            .with_resource_name(s(name))
            .with_resource_pattern_type(3)
            .with_principal(s("User:alice"))
            .with_host(s("*"))
            .with_operation(3)
            .with_permission_type(3),
    ]);
    let r = admin.call(3, &req);
    assert_eq!(
        r.results[0].error_code, 0,
        "{:?}",
        r.results[0].error_message
    );
}

/// Authorization as Kafka's: without READ on the group the request is
/// refused whole (GROUP_AUTHORIZATION_FAILED); without READ on a topic its
/// partitions are (TOPIC_AUTHORIZATION_FAILED), for ShareFetch and
/// ShareAcknowledge alike. `plain` is a PLAINTEXT listener (a super user),
/// `sasl` the SASL_PLAINTEXT one.
fn case_authorization(plain: &str, sasl: &str) {
    enable_share(plain);
    let tid = create_topic(plain, "authz", 1);
    let mut admin = Conn::login(sasl, "admin", "admin-secret");
    let mut alice = Conn::login(sasl, "alice", "alice-secret");
    let fetch = share_fetch_req("authz-g", "m", 0, tid, 0, &vec![], 0, 10);
    let r = alice.call(1, &fetch);
    assert_eq!(r.error_code, 30, "no READ on the group: {r:?}");
    let r = alice.call(
        1,
        &share_ack_req("authz-g", "m", 1, tid, 0, &vec![(0, 0, ACCEPT)]),
    );
    assert_eq!(r.error_code, 30, "no READ on the group: {r:?}");
    allow_read(&mut admin, 3, "authz-g");
    // The ACL is in force once the request gets past the group check.
    let deadline = Instant::now() + Duration::from_secs(20);
    let r = loop {
        let r = alice.call(1, &fetch);
        if r.error_code != 30 || Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(
        codes_of(&r, tid, 0),
        Some((29, 0)),
        "no READ on the topic: {r:?}"
    );
}

#[test]
fn share_authorization_on_fjord_and_kafka() {
    let b = Broker::start_with(&[
        "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms=PLAIN",
        &format!("listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}"),
        &format!("authorizer.class.name={STANDARD_AUTHORIZER}"),
        "super.users=User:admin;User:ANONYMOUS",
    ]);
    case_authorization(&b.listener("PLAINTEXT"), &b.listener("SASL_PLAINTEXT"));
    let sasl = common::ports::free_port();
    let Some(peer) = KafkaPeer::start_with(|plain, controller| {
        vec![
            format!(
                "listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl},CONTROLLER://127.0.0.1:{controller}"
            ),
            format!(
                "advertised.listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}"
            ),
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT".to_string(),
            "sasl.enabled.mechanisms=PLAIN".to_string(),
            format!("listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}"),
            format!("authorizer.class.name={STANDARD_AUTHORIZER}"),
            "super.users=User:admin;User:ANONYMOUS".to_string(),
        ]
    }) else {
        return;
    };
    case_authorization(&peer.addr, &format!("127.0.0.1:{sasl}"));
}
