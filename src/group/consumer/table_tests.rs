//! The answer of every consumer group state to every request, as a table
//! (rows: requests; columns: Empty, Assigning, Reconciling, Stable), in the
//! style of the classic core's `core_tests/table.rs`. Member `a` is the
//! group's first member (gone in Empty); codes are Kafka's.

use super::tests::{asg, G, H};
use super::{ConsumerGroupState, HeartbeatArgs};
use crate::error::KafkaCode;
use crate::group::JoinArgs;

/// The columns, in order.
const STATES: [ConsumerGroupState; 4] = [
    ConsumerGroupState::Empty,
    ConsumerGroupState::Assigning,
    ConsumerGroupState::Reconciling,
    ConsumerGroupState::Stable,
];

/// A group in `state` on topic `t` (4 partitions); gives the fixture and
/// member a's epoch (its last one for Empty).
fn fixture(state: ConsumerGroupState) -> (H, i32) {
    let mut h = H::new(&[("t", 4)]);
    let all = asg(&[("t", &[0, 1, 2, 3])]);
    let a = h.join("a", &["t"]).member_epoch;
    h.ok("a", a, Some(&all));
    match state {
        ConsumerGroupState::Empty => {
            h.ok("a", -1, None);
        }
        ConsumerGroupState::Assigning => {
            h.cfg.assignment_interval_ms = 60_000;
            h.now += 1;
            h.join("b", &["t"]);
        }
        ConsumerGroupState::Reconciling => {
            h.join("b", &["t"]);
        }
        ConsumerGroupState::Stable | ConsumerGroupState::Dead => {}
    }
    assert_eq!(h.describe().state, state, "fixture");
    (h, a)
}

type Request = fn(&mut H, i32) -> i16;

fn code<T, E: KafkaCode>(r: Result<T, E>) -> i16 {
    match r {
        Ok(_) => 0,
        Err(e) => e.code(),
    }
}

fn beat(h: &mut H, member: &str, epoch: i32) -> i16 {
    let mut args: HeartbeatArgs = H::base(member, epoch);
    args.owned = None;
    code(h.send(args))
}

fn classic_join(h: &mut H) -> i16 {
    let args = JoinArgs {
        group_id: G.to_string(),
        member_id: "c-1".to_string(),
        client_id: "classic".to_string(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".to_string(),
        // ConsumerProtocolSubscription v0 of topic "t".
        protocols: vec![(
            "range".to_string(),
            bytes::Bytes::from_static(&[0, 0, 0, 0, 0, 1, 0, 1, b't', 0xff, 0xff, 0xff, 0xff]),
        )],
        ..JoinArgs::default()
    };
    let (r, _) = h
        .groups
        .classic_join(&h.cfg, &args, &h.topics, &mut h.ids, h.now, &mut h.effects);
    code(r)
}

fn commit(h: &H, epoch: i32) -> i16 {
    let t = super::tests::tid("t");
    code(h.groups.check_commit(G, "a", epoch, Some(t), 0))
}

/// Each request with its answer in each column.
const TABLE: &[(&str, Request, [i16; 4])] = &[
    (
        "a new member joins (epoch 0)",
        |h, _| code(h.send(H::join_args("n", &["t"]))),
        [0, 0, 0, 0],
    ),
    (
        "a heartbeats at its epoch",
        |h, e| beat(h, "a", e),
        [25, 0, 0, 0],
    ),
    (
        "a heartbeats ahead of its epoch",
        |h, e| beat(h, "a", e + 1),
        [25, 110, 110, 110],
    ),
    (
        "an unknown member heartbeats",
        |h, _| beat(h, "z", 5),
        [25, 25, 25, 25],
    ),
    (
        "a leaves (-1)",
        |h, e| {
            let _ = e;
            beat(h, "a", -1)
        },
        [25, 0, 0, 0],
    ),
    (
        "a classic member joins",
        |h, _| classic_join(h),
        [0, 0, 0, 0],
    ),
    (
        "a classic Heartbeat from a (not classic)",
        |h, e| {
            code(
                h.groups
                    .classic_heartbeat(G, "a", None, e, h.now, &mut h.effects),
            )
        },
        [25, 25, 25, 25],
    ),
    ("a commits at its epoch", |h, e| commit(h, e), [25, 0, 0, 0]),
    (
        "a commits at an epoch before its partition's",
        |h, e| commit(h, e - 1),
        [25, 113, 113, 113],
    ),
];

#[test]
fn every_consumer_group_state_answers_every_request_as_kafka_does() {
    let mut wrong = Vec::new();
    for (what, request, answers) in TABLE {
        for (col, state) in STATES.iter().enumerate() {
            let (mut h, epoch) = fixture(*state);
            let got = request(&mut h, epoch);
            if got != answers[col] {
                wrong.push(format!(
                    "{what} in {}: {got}, want {}",
                    state.as_str(),
                    answers[col]
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
