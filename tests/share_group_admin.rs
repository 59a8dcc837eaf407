//! A share group's configs (KIP-932) in its share-partitions, with raw
//! frames, the same cases on Fjord (share.version=1 finalized with
//! UpdateFeatures) and on Apache Kafka 4.4: `share.record.lock.duration.ms`
//! set on the group is ShareFetch's `AcquisitionLockTimeoutMs`,
//! `share.delivery.count.limit` 2 archives a record after two releases,
//! `share.auto.offset.reset` `earliest` reads what was written before the
//! group (and `by_duration:PT1H` what was written in the last hour),
//! `latest` only what comes after; `share.isolation.level` read_committed
//! (an aborted transaction archived); a member leaving with records
//! acquired. The configs are set with
//! IncrementalAlterConfigs on the GROUP resource before the group's first
//! ShareFetch.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
// Not every helper of the shared frames is used here.
#[allow(dead_code)]
#[path = "share_fetch/wire.rs"]
mod wire;

use std::time::{Duration, Instant};

use common::raw::RawConn as Conn;
use common::*;
use kafka_protocol::messages::*;
use wire::*;

const RELEASE: i8 = 2;
const ACCEPT: i8 = 1;

/// A group config on the share-partition's window: a member of a group
/// whose `share.record.lock.duration.ms` is 15000 gets
/// `AcquisitionLockTimeoutMs` 15000; a group without it the broker's 30000.
fn case_lock_duration(t: &Target, name: &str) {
    let topic = format!("{name}-t");
    let group = format!("{name}-g");
    let tid = create_topic(&t.addr, &topic, 1);
    set_group_configs(
        &t.addr,
        &group,
        &[("share.record.lock.duration.ms", "15000")],
    );
    let member = join(t, &group, &[&topic]);
    let mut s = Session::new(t, &group, &member);
    let r = s.fetch(tid, 0, &vec![], 200, 100);
    assert_eq!(r.acquisition_lock_timeout_ms, 15_000, "{name}: {r:?}");
    produce(&t.addr, &topic, 0, &["a"]);
    assert_eq!(
        s.fetch_some(tid, 0, 100, Duration::from_secs(20)),
        vec![(0, 0, 1)],
        "{name}"
    );
    let other = format!("{name}-other");
    let member = join(t, &other, &[&topic]);
    let mut s = Session::new(t, &other, &member);
    let r = s.fetch(tid, 0, &vec![], 200, 100);
    assert_eq!(r.acquisition_lock_timeout_ms, 30_000, "{name}: {r:?}");
}

/// `share.delivery.count.limit` 2: a record released twice is archived and
/// never delivered again; the next record still is.
fn case_delivery_limit(t: &Target, name: &str) {
    let topic = format!("{name}-t");
    let group = format!("{name}-g");
    let tid = create_topic(&t.addr, &topic, 1);
    set_group_configs(&t.addr, &group, &[("share.delivery.count.limit", "2")]);
    let member = join(t, &group, &[&topic]);
    let mut s = Session::new(t, &group, &member);
    s.fetch(tid, 0, &vec![], 200, 100);
    produce(&t.addr, &topic, 0, &["once"]);
    for count in 1..=2 {
        let got = s.fetch_some(tid, 0, 100, Duration::from_secs(20));
        assert_eq!(got, vec![(0, 0, count)], "{name}");
        assert_eq!(s.ack(tid, 0, &vec![(0, 0, RELEASE)]), 0, "{name}");
    }
    // Released at the limit (2 deliveries): archived.
    let r = s.fetch(tid, 0, &vec![], 500, 100);
    assert!(acquired(&r, tid, 0).is_empty(), "{name}: archived: {r:?}");
    produce(&t.addr, &topic, 0, &["next"]);
    assert_eq!(
        s.fetch_some(tid, 0, 100, Duration::from_secs(20)),
        vec![(1, 1, 1)],
        "{name}: only the next record"
    );
    let r = s.fetch(tid, 0, &vec![(1, 1, ACCEPT)], 200, 100);
    assert!(acquired(&r, tid, 0).is_empty(), "{name}: {r:?}");
}

/// `share.auto.offset.reset`: `earliest` starts the share-partition at the
/// log start (the records written before the group), `latest` (the
/// default) at the end (only records written after).
fn case_auto_offset_reset(t: &Target, name: &str) {
    let topic = format!("{name}-t");
    let tid = create_topic(&t.addr, &topic, 1);
    produce(&t.addr, &topic, 0, &["a", "b"]);
    let early = format!("{name}-early");
    set_group_configs(&t.addr, &early, &[("share.auto.offset.reset", "earliest")]);
    let member = join(t, &early, &[&topic]);
    let mut s = Session::new(t, &early, &member);
    assert_eq!(
        s.fetch_some(tid, 0, 100, Duration::from_secs(20)),
        vec![(0, 1, 1)],
        "{name}: earliest"
    );
    // Written within the last hour: read, as with earliest.
    let recent = format!("{name}-recent");
    set_group_configs(
        &t.addr,
        &recent,
        &[("share.auto.offset.reset", "by_duration:PT1H")],
    );
    let member = join(t, &recent, &[&topic]);
    let mut r = Session::new(t, &recent, &member);
    assert_eq!(
        r.fetch_some(tid, 0, 100, Duration::from_secs(20)),
        vec![(0, 1, 1)],
        "{name}: by_duration"
    );
    let late = format!("{name}-late");
    let member = join(t, &late, &[&topic]);
    let mut l = Session::new(t, &late, &member);
    let r = l.fetch(tid, 0, &vec![], 200, 100);
    assert!(acquired(&r, tid, 0).is_empty(), "{name}: latest: {r:?}");
    produce(&t.addr, &topic, 0, &["c"]);
    assert_eq!(
        l.fetch_some(tid, 0, 100, Duration::from_secs(20)),
        vec![(2, 2, 1)],
        "{name}: latest"
    );
}

#[test]
fn share_group_configs_on_fjord() {
    let b = Broker::start();
    let t = Target {
        addr: b.bootstrap(),
    };
    enable_share(&t.addr);
    run_cases(&t, "f");
}

#[test]
fn share_group_configs_on_kafka() {
    let Some((_peer, t)) = kafka_target(&[]) else {
        return;
    };
    run_cases(&t, "k");
}

/// Sends a ShareGroupHeartbeat leave (epoch -1) for `member`.
fn leave(t: &Target, group: &str, member: &str) {
    let mut c = Conn::new(&t.addr);
    let r = c.call(
        1,
        &ShareGroupHeartbeatRequest::default()
            .with_group_id(s(group).into())
            .with_member_id(s(member))
            .with_member_epoch(-1),
    );
    assert_eq!(r.error_code, 0, "leave: {r:?}");
    assert_eq!(r.member_epoch, -1, "leave: {r:?}");
}

/// A member that leaves (ShareGroupHeartbeat epoch -1) while its share
/// session stays open: Kafka 4.4 does not release its acquired records at
/// the leave; another member gets them when the lock expires (the group's
/// 15000 ms here), with the delivery count bumped.
fn case_leave_keeps_locks(t: &Target, name: &str) {
    let topic = format!("{name}-t");
    let group = format!("{name}-g");
    let tid = create_topic(&t.addr, &topic, 1);
    set_group_configs(
        &t.addr,
        &group,
        &[("share.record.lock.duration.ms", "15000")],
    );
    let a = join(t, &group, &[&topic]);
    let mut sa = Session::new(t, &group, &a);
    sa.fetch(tid, 0, &vec![], 200, 100);
    let b = join(t, &group, &[&topic]);
    let mut sb = Session::new(t, &group, &b);
    sb.fetch(tid, 0, &vec![], 0, 100);
    produce(&t.addr, &topic, 0, &["x"]);
    assert_eq!(
        sa.fetch_some(tid, 0, 100, Duration::from_secs(20)),
        vec![(0, 0, 1)]
    );
    let acquired_at = Instant::now();
    leave(t, &group, &a);
    let r = sb.fetch(tid, 0, &vec![], 0, 100);
    if acquired_at.elapsed() < Duration::from_secs(10) {
        assert!(
            acquired(&r, tid, 0).is_empty(),
            "{name}: released at the leave: {r:?}"
        );
    }
    assert_eq!(
        sb.fetch_some(tid, 0, 100, Duration::from_secs(40)),
        vec![(0, 0, 2)],
        "{name}: after the lock"
    );
}

fn run_cases(t: &Target, tag: &str) {
    case_lock_duration(t, &format!("{tag}-lock"));
    case_delivery_limit(t, &format!("{tag}-limit"));
    case_auto_offset_reset(t, &format!("{tag}-reset"));
    case_leave_keeps_locks(t, &format!("{tag}-leave"));
    case_read_committed(t, &format!("{tag}-committed"));
}

/// `share.isolation.level` = `read_committed`: nothing of an open
/// transaction is acquired; once it is aborted its records are archived
/// (never delivered), its marker and the next record are acquired, as
/// Kafka 4.4 answers.
fn case_read_committed(t: &Target, name: &str) {
    let topic = format!("{name}-t");
    let group = format!("{name}-g");
    let txn = format!("{name}-txn");
    let tid = create_topic(&t.addr, &topic, 1);
    set_group_configs(
        &t.addr,
        &group,
        &[("share.isolation.level", "read_committed")],
    );
    let member = join(t, &group, &[&topic]);
    let mut ss = Session::new(t, &group, &member);
    ss.fetch(tid, 0, &vec![], 200, 100);
    let mut tx = RawTxn::begin(&t.addr, &txn, &topic);
    tx.produce(&["t1", "t2"]);
    let r = ss.fetch(tid, 0, &vec![], 500, 100);
    assert!(
        acquired(&r, tid, 0).is_empty(),
        "{name}: open transaction: {r:?}"
    );
    // The marker (offset 2) is in the log before the next record (3).
    tx.end(false, 3);
    assert_eq!(produce(&t.addr, &topic, 0, &["after"]), 3);
    let mut got = Vec::new();
    while !got.iter().any(|(_, l, _)| *l >= 3) {
        got.extend(ss.fetch_some(tid, 0, 100, Duration::from_secs(20)));
    }
    let offsets: Vec<i64> = got.iter().flat_map(|(f, l, _)| *f..=*l).collect();
    assert_eq!(offsets, vec![2, 3], "{name}: aborted 0-1 archived: {got:?}");
    assert!(got.iter().all(|(_, _, c)| *c == 1), "{name}: {got:?}");
}
